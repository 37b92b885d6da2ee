"""Case study 2's analysis of its records, on synthetic data (no ROS 2 needed): E0's and the
MT pool's time from the due time, the CPU probe, the records' storage, request priorities and
their timings, the analysis' bound on the hot path, hot-path subscriptions, the --dds-cpus
placement and --hot-wait."""

import pytest


def test_case_study_2_dds_cpus_spare_takes_the_cores_no_executor_uses():
    """--dds-cpus: the executor processes' other threads on their executors' cores (default)
    or on the spare ones (paamd's), and back on the executors' where none is spare."""
    import argparse

    from dataclasses import replace

    from paam_experiments.case_study2.placement import Placement, helper_cpus, helper_cpus_label
    pl = Placement(**{"executor_cpus": {"E0": 2, "E1": 3, "E2": 4, "E3": 5},
                      "server_cpus": [0, 1, 6, 7]})
    spare, default = argparse.Namespace(dds_cpus="spare"), argparse.Namespace(dds_cpus="executor")
    assert helper_cpus(pl, default) is None
    assert helper_cpus(pl, spare) == [0, 1, 6, 7]
    assert helper_cpus_label(pl, spare) == "on cores 0-1,6-7"
    none_left = replace(pl, server_cpus=[])
    assert helper_cpus(none_left, spare) is None
    assert "no core left" in helper_cpus_label(none_left, spare)
    assert helper_cpus_label(pl, default) == "on their executors' cores"


def test_case_study_2_analysis_sees_the_hot_path_as_one_chain_on_e0():
    from paam_experiments.case_study2 import bounds as cs2
    cpus = {"E0": 2, "E1": 3, "E2": 4, "E3": 5}
    spec = cs2.analysis_spec(0.0, 0.0, 1.0, cpus, buckets=6, epsilon=0.0, kappa=0.0)
    hot = next(c for c in spec.chains if c.name == cs2.HOT_CHAIN)
    assert len(hot.callbacks) == 9 and {cb.executor for cb in hot.callbacks} == {"E0"}
    # no accelerator time: the nine run times plus one settings callback (10.2 ms) blocking
    b = cs2.hot_path_bound(spec)
    assert b.cpu_ms == pytest.approx(62.8) and b.blocking_ms == pytest.approx(10.2)
    assert b.bound_ms == pytest.approx(73.0) and b.schedulable
    # 1 ms GPU segments (the hot path alone in the top bucket) and the 5 ms TPU segment
    b = cs2.hot_path_bound(cs2.analysis_spec(1.0, 5.0, 1.0, cpus, 6, 0.0, 0.0))
    assert b.bound_ms == pytest.approx(73.0 + 9 + 5)
    # epsilon per request (ten), kappa twice per GPU segment (nine), the cost per callback
    # (ten callbacks: the blocking one too), the settings request on top of its run time
    b2 = cs2.hot_path_bound(cs2.analysis_spec(1.0, 5.0, 1.0, cpus, 6, 0.1, 0.05,
                                              extra_cpu_ms=0.5, blocker_request_ms=3.0))
    assert b2.bound_ms == pytest.approx(87.0 + 10 * 0.1 + 18 * 0.05 + 9 * 0.5 + 0.5 + 3.0)
    # 2.5 ms segments: over the 100 ms period
    b = cs2.hot_path_bound(cs2.analysis_spec(2.5, 5.0, 1.0, cpus, 6, 0.0, 0.0))
    assert b.bound_ms > 100 and not b.schedulable


def test_case_study_2_breaks_e0_time_down_from_the_due_time():
    import numpy as np
    from paam_experiments.case_study2 import e0 as cs2
    from paam_experiments.case_study2.records import RunResult
    ms = 1_000_000
    # E0's callbacks (start, end, chain priority): a settings callback running at the due
    # time (0), the hot path's, a second settings callback inside the instance, a gap
    calls = np.array([[-5 * ms, 4 * ms, 40], [5 * ms, 20 * ms, 100], [21 * ms, 31 * ms, 40],
                      [31 * ms, 50 * ms, 100], [60 * ms, 70 * ms, 40]], dtype=np.int64)
    # one instance: due at 0, the later lidar 2 ms late (the KPI from 2 to 50 ms)
    r = RunResult(**{"hot_executor_calls_ns": calls, "hot_end_ns": np.array([50 * ms]),
                     "latency_ms": np.array([48.0]), "lidar_late_ms": np.array([2.0])})
    bd = cs2.executor_breakdown(r)
    assert bd["hot_ms"][0] == pytest.approx(34.0)    # 15 + 19
    assert bd["lower_ms"][0] == pytest.approx(14.0)  # 4 (from the due time) + 10
    assert bd["outside_ms"][0] == pytest.approx(2.0)
    assert bd["lower_started"][0] == 1               # the one started inside
    s = cs2.breakdown_summary(bd)
    assert s["instances"] == 1 and s["lower_started_histogram"] == {"1": 1}
    # not on record: no lateness, or a record that starts after the due time
    r.lidar_late_ms = np.array([np.nan])
    assert cs2.breakdown_summary(cs2.executor_breakdown(r)) is None
    r.lidar_late_ms, r.hot_executor_calls_ns = np.array([2.0]), calls[1:]
    assert np.isnan(cs2.executor_breakdown(r)["hot_ms"][0])
    r.hot_executor_calls_ns = np.zeros((0, 3), dtype=np.int64)
    assert cs2.executor_breakdown(r) is None


def test_case_study_2_splits_mt_instances_by_what_the_pool_of_threads_did():
    """MT with one pool of threads: an instance's time from the due time is hot callbacks
    running + every thread in a lower one + a thread free with none running, and the hot calls'
    wall time splits into requests, burn, other CPU, waiting for a CPU and off a CPU; the gap
    before a hot call on its own thread gives the executor's CPU and wait for a CPU."""
    from dataclasses import replace

    import numpy as np
    from paam_experiments.case_study2 import records as cs2
    from paam_experiments.case_study2 import threads as tb
    ms, t = 1_000_000, 1_000_000_000  # (t: the instance's due time)

    def call(thread, start, end, prio, cpu=(0, 0), runq=(0, 0), burn=0, seg=(0, 0, 0)):
        node = 5 if prio == 100 else 0  # (node 5 is on the hot path, 0 is not)
        row = [t + start * ms, t + end * ms, node, prio, cpu[0] * ms, runq[0] * ms, cpu[1] * ms,
               runq[1] * ms, burn * ms, *(x * ms for x in seg), thread]
        assert len(row) == tb.CALL_COLS
        return row

    calls = tb.by_start([np.array([
        call(0, -20, -10, 40),
        # hot on thread 0: wall 30 = requests 6-1 + burn 15 + other CPU 20-15-1 + waiting 5 + 1
        call(0, 0, 30, 100, cpu=(0, 20), runq=(0, 5), burn=15, seg=(6, 1, 1)),
        call(1, 10, 50, 40, cpu=(30, 45), runq=(0, 10)),
        call(0, 40, 60, 40, cpu=(20, 35), runq=(5, 5)),      # 40-50: both threads in lower calls
        # hot on thread 1 after a gap of 5 ms CPU and 2 waiting since its lower call
        call(1, 70, 100, 100, cpu=(50, 70), runq=(12, 12), burn=18, seg=(10, 2, 0)),
    ], dtype=np.int64)])
    calls[3, tb.NODE] = 1  # (the two lower calls of two nodes)
    r = cs2.RunResult(**{"mt_calls_ns": calls, "hot_end_ns": np.array([t + 100 * ms]),
                         "latency_ms": np.array([98.0]), "lidar_late_ms": np.array([2.0])})
    due = cs2.due_ns(r)
    assert due.tolist() == [t]  # (the KPI's end less its latency and the lidar's lateness)
    bd = tb.thread_breakdown(r, due, 100, {5})
    got = {k: float(v[0]) for k, v in bd.items()}
    assert got == pytest.approx({
        "hot_ms": 60, "held_ms": 0, "blocked_ms": 10, "idle_ms": 30, "hot_calls": 2,
        "hot_seg_ms": 15, "hot_burn_ms": 33, "hot_other_cpu_ms": 4, "hot_runq_ms": 5,
        "hot_off_ms": 3, "pick_cpu_ms": 5, "pick_runq_ms": 2})
    s = tb.thread_summary(bd, np.array([100.0]))
    assert s["instances"] == 1 and s["mean_slowest_1pct"]["blocked_ms"] == pytest.approx(10)
    assert "all threads in lower callbacks 10.0 -> 10.0" in tb.thread_line(s)
    # thread 1's lower call on the hot node: no hot call running while it runs is the node held
    held = calls.copy()
    held[2, tb.NODE] = 5
    bd = tb.thread_breakdown(replace(r, mt_calls_ns=held), due, 100, {5})
    assert [bd[k][0] for k in tb.TIME_SPLIT] == pytest.approx([60, 20, 0, 20])
    # two callbacks of one node at once: 20 ms of node 5's, none of node 0's (one at a time)
    assert tb.node_overlaps(held, [f"n{i}" for i in range(6)]) == pytest.approx({"n5": 20})
    assert tb.node_overlaps(calls, [f"n{i}" for i in range(6)]) == {}
    # with three threads, two in lower calls is not blocked
    calls3 = np.vstack([calls, calls[:1]])
    calls3[-1, tb.THREAD] = 2
    r3 = replace(r, mt_calls_ns=tb.by_start([calls3]))
    assert tb.thread_breakdown(r3, due, 100, {5})["blocked_ms"][0] == pytest.approx(0)
    # without schedstat the counters' columns are unknown, the time split is not
    calls[:, tb.CPU0:tb.RUNQ1 + 1] = -1
    bd = tb.thread_breakdown(replace(r, mt_calls_ns=calls), due, 100, {5})
    assert bd["idle_ms"][0] == pytest.approx(30) and np.isnan(bd["hot_runq_ms"][0])
    # not on record: a record that starts after the due time, none at all
    assert np.isnan(
        tb.thread_breakdown(replace(r, mt_calls_ns=calls[2:]), due, 100, {5})["hot_ms"][0])
    assert tb.thread_breakdown(replace(r, mt_calls_ns=None), due, 100, {5}) is None
    assert tb.thread_breakdown(r, None, 100, {5}) is None
    assert tb.thread_summary(None, np.array([1.0])) is None


def test_case_study_2_splits_e0_time_outside_callbacks_by_its_scheduler_counters():
    import numpy as np
    from paam_experiments.case_study2 import e0 as cs2
    from paam_experiments.case_study2 import records, report
    us = 1_000
    ms = 1_000 * us
    # The same five callbacks, now with E0's thread's CPU and run-queue counters (ns) at each
    # start and end. Outside callbacks in the instance (0 to 50 ms): 4-5 ms (0.25 on the CPU,
    # 0.5 waiting for it) and 20-21 ms (0.5 on the CPU); the 50-60 ms gap lies after it.
    # Last column: the CPU time each spent in the number cruncher's burn (the rest of its CPU
    # time, 1, 0.5, 1, 1 and 0 ms, is Python's).
    calls = np.array([
        [-5 * ms, 4 * ms, 40, 0, 0, 9 * ms, 0, 8 * ms],
        [5 * ms, 20 * ms, 100, 9250 * us, 500 * us, 23250 * us, 1500 * us, 13500 * us],
        [21 * ms, 31 * ms, 40, 23750 * us, 1500 * us, 33750 * us, 1500 * us, 9 * ms],
        [31 * ms, 50 * ms, 100, 33750 * us, 1500 * us, 51750 * us, 2500 * us, 17 * ms],
        [60 * ms, 70 * ms, 40, 52750 * us, 4500 * us, 62750 * us, 4500 * us, 10 * ms]],
        dtype=np.int64)
    r = records.RunResult(**{"hot_executor_calls_ns": calls,
                             "hot_end_ns": np.array([50 * ms]), "latency_ms": np.array([48.0]),
                             "lidar_late_ms": np.array([2.0])})
    bd = cs2.executor_breakdown(r)
    assert bd["outside_ms"][0] == pytest.approx(2.0)
    assert bd["outside_cpu_ms"][0] == pytest.approx(0.75)
    assert bd["outside_runq_ms"][0] == pytest.approx(0.5)
    assert bd["outside_rest_ms"][0] == pytest.approx(0.75)  # asleep, or the host's
    assert bd["inside_runq_ms"][0] == pytest.approx(2.0)    # 1 in each hot-path callback
    assert bd["callbacks"][0] == 4
    assert bd["longest_gap_cpu_ms"][0] == pytest.approx(0.5)
    # beyond the burn inside: 4/9 of the first callback's 1 ms (it began before the due time)
    assert bd["inside_beyond_burn_ms"][0] == pytest.approx(1 * 4 / 9 + 0.5 + 1 + 1)
    s = cs2.breakdown_summary(bd)
    assert s["outside_split"]["outside_runq_ms"]["max"] == pytest.approx(0.5)
    assert s["outside_split"]["most_outside_1pct"]["outside_cpu_ms"] == pytest.approx(0.75)
    assert "the 1% with the most (1): 2.0 = 0.8 + 0.5 + 0.8" in report.split_line(s)
    # counters unknown (-1: no schedstat there): the split is left out, the rest is kept
    calls[:, 3:] = -1
    bd = cs2.executor_breakdown(r)
    assert bd["hot_ms"][0] == pytest.approx(34.0) and np.isnan(bd["outside_cpu_ms"][0])
    assert "outside_split" not in cs2.breakdown_summary(bd)
    # records from before the counters (three columns) are padded as unknown
    assert records.hot_calls_by_start([calls[:, :3]]).shape == (5, 10)


def test_case_study_2_records_leave_nothing_for_the_collector():
    import gc
    import numpy as np
    from paam_experiments.case_study2 import records as cs2
    rows = cs2.Rows(3)
    before = len(gc.get_objects())
    for i in range(1000):
        rows.append((i, -i, 1 << 40))
    # (a list of 1000 tuples would add 1000 objects for the collector to count and scan)
    assert len(gc.get_objects()) - before < 10
    assert len(rows) == 1000
    a = rows.array()
    assert a.dtype == np.int64 and a.shape == (1000, 3) and a[999].tolist() == [999, -999, 1 << 40]
    with pytest.raises(ValueError):
        rows.append((1, 2))
    assert cs2.Rows(4).array().shape == (0, 4)


def test_case_study_2_cpu_probe_is_the_median_per_instance_and_follows_e0s_cpu_time():
    import numpy as np
    from paam_experiments.case_study2 import e0 as cs2
    from paam_experiments.case_study2 import records, report
    us = 1_000
    ms = 1_000 * us
    # Five instances, 100 ms apart, each with two E0 callbacks (0-40 and 41+k-90 ms of its
    # period) and a gap between them whose CPU time grows (0.5, 1, ..., 2.5 ms). The probes
    # before each callback (C, Python ns) grow with it. One preempted probe (900 µs) in the
    # last instance: with two callbacks the median is their mean, so it shows there (with more
    # callbacks per instance, as in the case study, the median outvotes it).
    rows, cpu = [], 0
    for k in range(5):
        t = k * 100 * ms
        gap = (k + 1) * 500 * us
        probe = (4 + k) * us, (7 + 2 * k) * us
        for j, (a, b) in enumerate(((0, 40), (41 + k, 90))):
            start_cpu = cpu + (gap if j == 1 else 0)
            rows.append([t + a * ms, t + b * ms, 100, start_cpu, 0, start_cpu + (b - a) * ms, 0,
                         (b - a) * ms, *probe])
            cpu = start_cpu + (b - a) * ms
    calls = np.array(rows, dtype=np.int64)
    calls[-1, 8] = 900 * us
    r = records.RunResult(**{"hot_executor_calls_ns": calls,
                             "hot_end_ns": np.array([k * 100 * ms + 90 * ms for k in range(5)]),
                             "latency_ms": np.full(5, 90.0), "lidar_late_ms": np.zeros(5)})
    bd = cs2.executor_breakdown(r)
    assert bd["outside_cpu_ms"] == pytest.approx([0.5, 1, 1.5, 2, 2.5])
    assert bd["probe_c_us"][:4] == pytest.approx([4, 5, 6, 7])
    assert bd["probe_c_us"][4] == pytest.approx((8 + 900) / 2)
    assert bd["probe_py_us"] == pytest.approx([7, 9, 11, 13, 15])
    s = cs2.breakdown_summary(bd)
    pr = s["cpu_probe"]
    assert pr["instances"] == 5 and pr["probe_py_us"]["r_outside_cpu"] == pytest.approx(1.0)
    assert pr["probe_py_us"]["most_outside_1pct_mean"] == pytest.approx(15.0)
    assert "Python 11.00 / " in report.probe_line(s)
    # without --cpu-probe (-1): no probe figures, the rest as before
    calls[:, 8:] = -1
    bd = cs2.executor_breakdown(r)
    assert np.isnan(bd["probe_c_us"]).all() and bd["outside_cpu_ms"][4] == pytest.approx(2.5)
    assert "cpu_probe" not in cs2.breakdown_summary(bd)


def test_case_study_2_request_priority_is_the_chains_or_its_executors_top():
    from paam_experiments.case_study2 import graph as cs2
    # chain: the callback's own chain; the cluster detector's second connection is the
    # cluster-settings chain (40) although the node is on the hot path (100)
    assert cs2.request_priority("EuclideanClusterDetector", 0, "chain") == 100
    assert cs2.request_priority("EuclideanClusterDetector", 1, "chain") == 40
    assert cs2.request_priority("IntersectionOutput", 0, "chain") == 40
    # executor: the most critical chain of the callback's (4ST) executor
    assert cs2.request_priority("EuclideanClusterDetector", 1, "executor") == 100  # E0
    assert cs2.request_priority("LanePlanner", 0, "executor") == 90                # E1
    assert cs2.request_priority("PointCloudMap", 0, "executor") == 70              # E2
    assert cs2.request_priority("IntersectionOutput", 0, "executor") == 50         # E3
    # never below the chain's own
    for ex, _cpu, _prio, nodes in cs2.EXECUTORS:
        for n in nodes:
            for i in range(len(cs2.BY_NAME[n].run_ms)):
                assert (cs2.request_priority(n, i, "executor")
                        >= cs2.request_priority(n, i, "chain")), (ex, n, i)
    with pytest.raises(ValueError, match="request priority mode"):
        cs2.request_priority("LanePlanner", 0, "process")


def test_case_study_2_times_paam_requests_per_chain_priority():
    import numpy as np
    from paam_experiments.case_study2 import kpis as cs2
    from paam_experiments.case_study2.records import STAGES
    k = len(STAGES)

    def row(prio, total_ns):  # stamps 1 us apart, the last stage taking the rest
        stamps = [1000 * (i + 1) for i in range(k - 1)]
        return [prio, *stamps, stamps[-1] + total_ns - 1000 * (k - 2)]
    stages = np.array([row(100, 2_000_000), row(100, 4_000_000), row(40, 9_000_000),
                       [40] + [0] * k])  # a request with a stamp missing is left out
    by = cs2.request_by_priority(stages)
    assert list(by) == ["100", "40"]  # most critical first
    assert by["100"]["n"] == 2 and by["40"]["n"] == 1
    assert by["100"]["max"] == pytest.approx(4.0) and by["40"]["p50"] == pytest.approx(9.0)
    assert cs2.request_by_priority(np.zeros((0, 1 + k), dtype=np.int64)) == {}


def test_case_study_2_marks_hot_path_subscriptions():
    from paam_experiments.case_study2 import graph as cs2
    assert cs2.hot_subscription("PointCloudFusion<-PointsTransformerRear")
    assert cs2.hot_subscription("EuclideanClusterDetector<-RayGroundFilter")
    assert not cs2.hot_subscription("EuclideanClusterDetector<-EuclideanClusterSettings")
    assert not cs2.hot_subscription("BehaviorPlanner<-ObjectCollisionEstimator")


def test_case_study_2_hot_wait_applies_to_the_hot_paths_callbacks_only():
    """--hot-wait: the hot path's callbacks (chain priority HOT_PRIORITY, the rear transformer's
    TPU request among them) wait that way, every other callback as --wait says."""
    from paam_experiments.case_study2 import graph as cs2
    from paam_experiments.case_study2.callbacks import ProcessGraph
    from paam_experiments.case_study2.config import ProcessConfig
    g = ProcessGraph.__new__(ProcessGraph)
    g.cfg = ProcessConfig(**{"wait": "suspend", "hot_wait": "spin"})
    assert g._wait(cs2.HOT_PRIORITY) == "spin"
    assert g._wait(cs2.CHAIN_PRIORITY[cs2.TPU_NODE]) == "spin"
    assert {g._wait(p) for p in set(cs2.CHAIN_PRIORITY.values()) - {cs2.HOT_PRIORITY}} == {
        "suspend"}

