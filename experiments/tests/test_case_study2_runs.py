"""``paam eval case-study-2``: end-to-end runs of the reference system at CI scale (4ST, MT,
shared PiCAS executor, async segments, E0 in C++), the refusal of bad arguments, and --replot.

Lower bounds only: timings on a shared CI machine are noisy.
"""
import json
import os

import pytest

from eval_helpers import _paam, _cpus


def cs2_system():
    from paam_experiments.case_study2.graph import SYSTEM
    return SYSTEM


def test_case_study_2_runs_the_reference_system_and_computes_its_kpis(tmp_path):
    pytest.importorskip("rclpy", reason="ROS 2 (rclpy) is not installed: `make ros`")
    pytest.importorskip("std_msgs.msg", reason="std_msgs is not installed: `make ros`")
    pytest.importorskip("paam_msgs.msg", reason="paam_msgs is not built: ros2/build_msgs.sh")
    r = _paam("eval", "case-study-2", "--quick", "--methods", "ros2,picas,paam",
              "--cpu-probe", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "summary.json").read_text())
    # --cpu-probe: E0's fixed work timed per instance, a few µs (where schedstat is readable)
    if os.path.exists("/proc/thread-self/schedstat"):
        e0 = data["results"]["4ST"]["PAAM"]["hot_executor_from_due"]
        probe = e0["cpu_probe"]["probe_c_us"]
        assert 0 < probe["p50"] <= probe["max"] < 10_000, probe
        assert "--cpu-probe: fixed work" in r.stdout
    assert data["params"]["setups"] == "4ST"  # --quick: 4ST unless --setups says MT
    # each executor process's threads by the cores they may run on, halfway through: its
    # executor and DDS's threads at least, on the cores the run may use
    allowed = set(os.sched_getaffinity(0))
    for method in ("ROS 2", "PiCAS", "PAAM"):
        by_process = data["results"]["4ST"][method]["thread_cpus"]
        assert set(by_process) == {"E0", "E1", "E2", "E3"}, (method, by_process)
        for counts in by_process.values():
            assert sum(counts.values()) >= 2, (method, by_process)
            for cpus in counts:
                assert set(_cpus(cpus)) <= allowed, (method, cpus)
    assert "threads per process by the cores they may run on" in r.stdout
    for server in ("gpu", "tpu"):
        assert any("serving on" in line for line in data["paamd_startup"][server]), server
    duration = data["params"]["duration"]
    # From the later lidar stamp an instance runs at least one lidar callback, one points
    # transformer, the fusing callback, ray ground filter, cluster detector and collision
    # estimator: their run times (x scale) and six GPU segments.
    floor = data["hot_path_run_ms"]
    assert floor > 0
    rows = (tmp_path / "hot_path.csv").read_text().splitlines()
    methods = ("ROS 2", "PiCAS", "PAAM")
    for method in methods:
        s = data["results"]["4ST"][method]
        hot, bp, drops = s["hot_path_ms"], s["bp_period_ms"], s["drops"]
        # 100 ms lidars: about 10 instances a second reach the estimator.
        assert 0.1 * 10 * duration <= hot["n"] <= 10 * duration + 2, (method, hot)
        assert hot["min"] >= 0.98 * floor, (method, hot["min"], floor)
        assert hot["min"] <= hot["p99"] <= hot["max"]
        assert hot["n"] <= s["lidar_samples"]["front"] + 1
        # The behavior planner's 100 ms timer.
        # the planner's 100 ms timer ran through the run: a quarter of its expiries at least,
        # never more often than its period
        assert bp["n"] >= 0.25 * duration / 0.1 and bp["mean"] >= 80, (method, bp)
        # Drops: a count per instance, every instance counted once.
        assert sum(drops["histogram"].values()) == hot["n"]
        assert drops["total"] >= 0 and drops["instances_with_drops"] <= hot["n"]
        assert sum(1 for line in rows if f",{method}," in line) == hot["n"]
        # Four executors; PiCAS and PAAM with an OS priority (SCHED_FIFO or the nice fallback).
        assert len(s["rt"]) == 4, (method, s["rt"])
        for note in s["rt"]:
            if method == "ROS 2":
                assert "SCHED_OTHER" in note, note
            else:
                assert "SCHED_FIFO" in note or "nice" in note, (method, note)
    # GPU segments: their wall time for every method; paamd's stages for PAAM, whose device
    # stage is the segment itself and whose stages fit inside the wall time.
    gpu_ms = data["params"]["gpu_ms_eff"]
    for method in methods:
        w = data["results"]["4ST"][method]["gpu_segment_wall_ms"]
        assert w["n"] > 0 and w["min"] >= 0.9 * gpu_ms, (method, w)
    st = data["results"]["4ST"]["PAAM"]["paam_gpu_stages_ms"]
    dev = st["device_start->device_end"]
    assert dev["n"] > 0 and dev["p50"] >= 0.9 * gpu_ms, dev
    assert sum(v["mean"] for v in st.values()) <= data["results"]["4ST"]["PAAM"][
        "gpu_segment_wall_ms"]["mean"] * 1.05
    for method in ("ROS 2", "PiCAS"):  # direct invocation: no request went through paamd
        assert data["results"]["4ST"][method]["paam_gpu_stages_ms"]["dequeued->picked"]["n"] == 0
    # paam_stages.csv: the same PAAM requests one by one, with their chain priorities (the hot
    # path's is the highest)
    stages = (tmp_path / "paam_stages.csv").read_text().splitlines()
    assert stages[0].startswith("setup,method,t_s,chain_priority,submitted->dequeued_us")
    assert len(stages) - 1 == dev["n"]
    prios = {int(line.split(",")[3]) for line in stages[1:]}
    # submitted on hot_path.csv's clock: inside the recorded part of the run
    sub = [float(line.split(",")[2]) for line in stages[1:]]
    assert data["params"]["warmup"] - 0.5 <= min(sub) <= max(sub) <= (
        data["params"]["warmup"] + duration + 1), (min(sub), max(sub))
    assert len(prios) > 1 and all(line.startswith("4ST,PAAM,") for line in stages[1:])
    by_prio = data["results"]["4ST"]["PAAM"]["paam_gpu_request_ms_by_chain_priority"]
    assert {int(p) for p in by_prio} == prios
    assert sum(v["n"] for v in by_prio.values()) == dev["n"]
    # dropped samples per subscription: "node<-topic" of the graph, positive counts
    topics = {t for n in cs2_system() for t in (n.outputs or (n.name,))}
    for method in methods:
        for key, n in data["results"]["4ST"][method]["drops_by_subscription"].items():
            node, _, topic = key.partition("<-")
            assert node in {n.name for n in cs2_system()} and topic in topics, key
            assert isinstance(n, int) and n > 0, (key, n)
    assert "dropped samples by subscription" in r.stdout
    # the host's /proc/stat each second, every hot-path instance placed quiet or noisy
    host_rows = (tmp_path / "host_stat.csv").read_text().splitlines()
    assert host_rows[0].startswith("setup,method,t_s,busy_ms,steal_ms,steal_ms_executor_cpus")
    for method in methods:
        s = data["results"]["4ST"][method]
        assert s["host"]["samples"] >= duration, s["host"]
        assert sum(1 for line in host_rows if f",{method}," in line) == s["host"]["samples"]
        assert s["host"]["busy_ms_per_s"]["mean"] > 0
        split = s["hot_path_by_host_steal"]
        assert split["quiet"]["n"] + split["noisy"]["n"] == s["hot_path_ms"]["n"], split
        assert split["drops"]["quiet"] + split["drops"]["noisy"] == s["drops"]["total"]
        # the collector's pauses per process (4ST: one per executor), the hot path against E0's
        g = s["gc"]
        assert set(g["by_process"]) == {"E0", "E1", "E2", "E3"}, g
        assert g["hot_path"]["process"] == "E0"
        assert g["hot_path"]["instances"] == s["hot_path_ms"]["n"]
        assert 0 <= g["hot_path"]["slowest_1pct_during_a_collection"] <= g["hot_path"][
            "slowest_1pct"] <= g["hot_path"]["instances"]
    assert "Python's collector (--gc default)" in r.stdout
    assert (tmp_path / "fig11d_host_steal.png").stat().st_size > 0
    # hot_path.csv places each instance's hot-path callbacks in time: ends in path order
    head = rows[0].split(",")
    last = rows[-1].split(",")
    at = [float(last[head.index(c)]) for c in ("PointCloudFusion_end_ms", "RayGroundFilter_end_ms",
                                               "EuclideanClusterDetector_end_ms",
                                               "ObjectCollisionEstimator_start_ms",
                                               "latency_ms")]
    assert 0 < at[0] < at[1] < at[2] <= at[3] < at[4], at
    # ... and the lidars' phase: the later stamp at or after the earlier one, for every instance
    gaps = [float(row.split(",")[head.index("lidar_gap_ms")]) for row in rows[1:]]
    assert gaps and min(gaps) >= 0, gaps[:5]
    # the timers' own phase (their due times apart) within a period, and the later lidar
    # callback starting at or after its due time
    phase = [float(v) for v in (row.split(",")[head.index("lidar_phase_ms")] for row in rows[1:])
             if v]
    late = [float(v) for v in (row.split(",")[head.index("lidar_late_ms")] for row in rows[1:])
            if v]
    assert len(phase) == len(late) >= 0.9 * len(gaps), (len(phase), len(gaps))
    # (under load a lidar sample can be dropped, and the fusion then pairs samples of two
    # periods)
    assert 0 <= min(phase) and max(phase) < 2 * 100, (min(phase), max(phase))
    assert min(late) > -0.5, min(late)
    for method in methods:  # the hot path from the due time: the KPI plus that lateness
        res = data["results"]["4ST"][method]
        due, kpi = res["hot_path_from_due_ms"], res["hot_path_ms"]
        assert due["n"] == res["lidar_late_ms"]["n"] >= 0.9 * kpi["n"], (method, due["n"])
        assert due["min"] >= kpi["min"] - 0.5, (method, due)
    assert "hot path from the later lidar timer's due time" in r.stdout
    for method in methods:
        assert data["results"]["4ST"][method]["lidar_gap_ms"]["n"] == data["results"]["4ST"][
            method]["hot_path_ms"]["n"]
    # E0 from the due time, per instance: its time in hot-path callbacks, lower ones and
    # outside callbacks adds up to the hot path from the due time (synchronous segments: one
    # callback at a time); the analysis' bound for PAAM, and its system file for paam analyze
    for method in methods:
        bd = data["results"]["4ST"][method]["hot_executor_from_due"]
        assert bd["instances"] >= 0.9 * data["results"]["4ST"][method]["hot_path_ms"]["n"]
        w = bd["slowest"]
        assert w["hot_ms"] + w["lower_ms"] + w["outside_ms"] == pytest.approx(
            data["results"]["4ST"][method]["hot_path_from_due_ms"]["max"], abs=0.01), method
        assert w["hot_ms"] > 0 and w["lower_ms"] >= 0 and w["outside_ms"] > -0.01, w
    col = [row.split(",")[head.index("e0_hot_ms")] for row in rows[1:]]
    assert sum(1 for v in col if v) >= 0.9 * len(col)
    bound = data["results"]["4ST"]["PAAM"]["analysis"]
    assert 0 < bound["epsilon_ms"] < 50 and bound["settings_request_max_ms"] >= gpu_ms * 0.9
    written = bound["as_written"]["bound_ms"]
    assert written < bound["with_cost"]["bound_ms"] <= bound["with_cost_sync_blocker"]["bound_ms"]
    assert bound["observed_from_due_max_ms"] == data["results"]["4ST"]["PAAM"][
        "hot_path_from_due_ms"]["max"]
    assert data["results"]["4ST"]["PiCAS"].get("analysis") is None  # PAAM's analysis only
    a = _paam("analyze", str(tmp_path / "system_4st.yaml"))
    assert a.returncode == 0 and f"{written:.3f}" in a.stdout, a.stdout + a.stderr
    assert "the analysis' bound on the hot path" in r.stdout
    hops = data["results"]["4ST"]["PAAM"]["hot_path_hops_ms"]
    assert abs(sum(v["p50"] for v in hops.values()) - data["results"]["4ST"]["PAAM"][
        "hot_path_ms"]["p50"]) < 0.2 * data["results"]["4ST"]["PAAM"]["hot_path_ms"]["p50"]
    assert "hot path" in r.stdout and "BP mean" in r.stdout and "by hop" in r.stdout
    later = data["results"]["4ST"]["PAAM"]["later_lidar"]
    assert later["front"]["n"] + later["rear"]["n"] == data["results"]["4ST"]["PAAM"][
        "hot_path_ms"]["n"] and "which lidar's callback started later" in r.stdout
    if os.path.exists("/proc/thread-self/schedstat"):  # E0's time split by its counters
        split = data["results"]["4ST"]["PAAM"]["hot_executor_from_due"]["outside_split"]
        assert split["callbacks"]["p50"] >= 6  # the hot path's own callbacks, at least
        assert split["outside_cpu_ms"]["p50"] > 0
    for f in ("fig11a_hot_path_latency.png", "fig11b_bp_period.png", "fig11c_drops.png",
              "bp_period.csv", "summary.csv"):
        assert (tmp_path / f).stat().st_size > 0


def _cs2_quick(tmp_path, *args) -> dict:
    """``paam eval case-study-2 --quick *args`` into ``tmp_path`` (skipped without ROS 2): its
    summary.json."""
    pytest.importorskip("rclpy", reason="ROS 2 (rclpy) is not installed: `make ros`")
    pytest.importorskip("std_msgs.msg", reason="std_msgs is not installed: `make ros`")
    pytest.importorskip("paam_msgs.msg", reason="paam_msgs is not built: ros2/build_msgs.sh")
    r = _paam("eval", "case-study-2", "--quick", *args, "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads((tmp_path / "summary.json").read_text())


def _cs2_hot_path_ran(data: dict, setup: str, method: str) -> dict:
    """Lidar instances reached the estimator (a tenth of them at least: a busy machine drops
    many), none faster than the run times allow; the setup x method's results."""
    s = data["results"][setup][method]
    hot = s["hot_path_ms"]
    assert hot["n"] >= 0.1 * 10 * data["params"]["duration"], (method, hot)
    assert hot["min"] >= 0.98 * data["hot_path_run_ms"], (method, hot)
    return s


def test_case_study_2_mt_runs_one_process_of_four_executors(tmp_path):
    """MT at the smoke scale (--quick runs 4ST unless --setups says MT): one process, rclpy's
    MultiThreadedExecutor for ROS 2 and four PicasExecutor threads for PAAM, each pinned to its
    core."""
    data = _cs2_quick(tmp_path, "--setups", "MT", "--methods", "ros2,paam",
                      "--intersection-groups", "connection")
    assert data["params"]["setups"] == "MT"
    assert "connections in a callback group each" in (tmp_path / "summary.txt").read_text()
    for method in ("ROS 2", "PAAM"):
        s = _cs2_hot_path_ran(data, "MT", method)
        threads = s["thread_cpus"]
        assert list(threads) == ["E0+E1+E2+E3"], (method, threads)
        assert sum(threads["E0+E1+E2+E3"].values()) >= 4, (method, threads)
    # PAAM: four executors, each with an OS priority and its core
    assert len(data["results"]["MT"]["PAAM"]["rt"]) == 4
    # ROS 2's pool of threads has every callback on record; the partitioned PAAM has E0's
    mt = data["results"]["MT"]["ROS 2"]["mt_threads_from_due"]
    _mt_split_holds(mt)
    # (only the intersection node's connections, each in its own group, may run at once)
    assert set(data["results"]["MT"]["ROS 2"]["mt_node_overlap_ms"]) <= {
        "EuclideanClusterDetector"}
    assert not data["results"]["MT"]["PAAM"].get("mt_threads_from_due")


def _mt_split_holds(mt: dict) -> None:
    """case_study2.threads' split of the time from the due time: its measured parts never
    exceed it (the rest, idle_ms, is never negative: no instant counted twice)."""
    a = mt["mean_all"]
    assert mt["instances"] >= 10 and a["hot_calls"] >= 7, a
    assert mt["idle_ms"]["min"] >= -1e-6 and a["hot_ms"] <= a["from_due_ms"], mt["idle_ms"]
    assert a["hot_burn_ms"] > 0 and a["hot_ms"] > 0, a


def test_case_study_2_mt_with_one_shared_picas_executor(tmp_path):
    """--mt-executor shared: PiCAS's and PAAM's MT is one MultiThreadedPicasExecutor whose four
    threads, each pinned to a 4ST executor's core at E0's priority, share every callback; the
    hot path completes and the summary says so. With --mt-hot-threads 1 the thread on E0's core
    runs the hot path only (the other callbacks still run: the behavior planner's period); with
    --hot-lanes 2 the GPU paamd's top bucket has two lanes; --switch-interval-ms reaches the
    executor process."""
    data = _cs2_quick(tmp_path, "--setups", "MT", "--methods", "picas,paam",
                      "--mt-executor", "shared", "--mt-hot-threads", "1", "--hot-lanes", "2",
                      "--switch-interval-ms", "1")
    assert data["params"]["mt_executor"] == "shared" and data["params"]["mt_hot_threads"] == 1
    text = (tmp_path / "summary.txt").read_text()
    assert "one MultiThreadedPicasExecutor" in text and "first 1 thread(s)" in text
    assert "runs 2 kernels at once" in text and data["params"]["hot_lanes"] == 2
    for method in ("PiCAS", "PAAM"):
        s = _cs2_hot_path_ran(data, "MT", method)
        rt = s["rt"]
        assert [r.split(":")[0] for r in rt] == [f"MT thread E{i}" for i in range(4)], rt
        assert ["hot path only" in r for r in rt] == [True, False, False, False], rt
        assert s["bp_period_ms"]["n"] >= 0.25 * data["params"]["duration"] / 0.1, method
        # no executor of its own for the hot path: E0's per-callback record stays empty; every
        # callback is on record with its thread instead
        assert not s.get("hot_executor_from_due"), method
        _mt_split_holds(s["mt_threads_from_due"])
        # every node's callbacks in its one mutually exclusive group: never two at once
        assert s["mt_node_overlap_ms"] == {}, (method, s["mt_node_overlap_ms"])
        assert s["python_switch_interval_ms"] == pytest.approx(1.0), method


def test_case_study_2_async_segments_keep_every_executor_running(tmp_path):
    """--segments async: PAAM's callbacks await their segments (PiCAS's stay synchronous).
    Every executor keeps serving (an executor stalled on a held callback's message would never
    run the behavior planner again), and the hot path still completes in order. Counts with
    generous margins: a busy machine delays the planner, a stalled executor stops it."""
    data = _cs2_quick(tmp_path, "--methods", "picas,paam", "--segments", "async")
    assert data["params"]["segments"] == "async"
    assert "PAAM's segments awaited (async)" in (tmp_path / "summary.txt").read_text()
    duration = data["params"]["duration"]
    for method in ("PiCAS", "PAAM"):
        s = _cs2_hot_path_ran(data, "4ST", method)
        bp = s["bp_period_ms"]
        # the planner's 100 ms timer ran through the run: a quarter of its expiries at least,
        # never more often than its period
        assert bp["n"] >= 0.25 * duration / 0.1 and bp["mean"] >= 80, (method, bp)
        assert s["gpu_segment_wall_ms"]["n"] > 0
    # the CPU time beyond the burn is not measured with async segments (the thread runs other
    # callbacks while one awaits)
    assert data["results"]["4ST"]["PAAM"]["cpu_beyond_burn_ms"]["n"] == 0


def test_case_study_2_replot_draws_runs_together_from_plain_and_xz_csv(tmp_path):
    import lzma

    from paam.cli import main

    hot = ("setup,method,t_s,latency_ms,drops,lidar_late_ms\n"
           + "".join(f"MT,{{m}},{i / 10:.3f},{80 + i % 7}.0,{i % 2},{i % 5}.0\n"
                     for i in range(40)))
    bp = "setup,method,t_s,period_ms\n" + "".join(f"MT,{{m}},{i / 10:.3f},{99 + i % 3}.0\n"
                                                  for i in range(40))
    for name, method, packed in (("a", "PAAM", False), ("b", "PiCAS", True)):
        d = tmp_path / name
        d.mkdir()
        (d / "summary.json").write_text(json.dumps({"params": {"scale": 1.0, "gpu_ms": 2.5}}))
        (d / "bp_period.csv").write_text(bp.format(m=method))
        if packed:  # committed raw results are xz-compressed
            with lzma.open(d / "hot_path.csv.xz", "wt") as f:
                f.write(hot.format(m=method))
        else:
            (d / "hot_path.csv").write_text(hot.format(m=method))
    out = tmp_path / "both"
    assert main(["eval", "case-study-2", "--replot", "--inputs",
                 f"{tmp_path / 'a'},{tmp_path / 'b'}", "--out", str(out)]) == 0
    for fig in ("fig11a_hot_path_latency.png", "fig11b_bp_period.png", "fig11c_drops.png"):
        assert (out / fig).stat().st_size > 1000
    # runs made with different segment lengths are not drawn as one
    (tmp_path / "b" / "summary.json").write_text(json.dumps({"params": {"scale": 1.0,
                                                                         "gpu_ms": 2.0}}))
    with pytest.raises(SystemExit, match="differ"):
        main(["eval", "case-study-2", "--replot", "--inputs",
              f"{tmp_path / 'a'},{tmp_path / 'b'}", "--out", str(out)])


def test_case_study_2_refuses_hot_threads_without_the_shared_executor_and_bad_counts(tmp_path):
    from paam.cli import main
    for extra, msg in ((["--mt-hot-threads", "1"], "needs --mt-executor shared"),
                       (["--mt-executor", "shared", "--mt-hot-threads", "4"], "0 to 3"),
                       (["--mt-executor", "shared", "--mt-hot-threads", "-1"], "0 to 3"),
                       (["--hot-lanes", "0"], "1 to 8"),
                       (["--switch-interval-ms", "0"], "above 0"),
                       (["--switch-interval-ms", "-2"], "above 0")):
        with pytest.raises(SystemExit, match=msg):
            main(["eval", "case-study-2", "--quick", "--setups", "MT", *extra,
                  "--out", str(tmp_path)])
    assert not any(tmp_path.iterdir()), "nothing may be written before the arguments are checked"


def test_case_study_2_e0_in_cpp_runs_the_hot_path_with_the_same_records(tmp_path):
    """--e0-executor cpp: 4ST's E0 is paam_cs2_executor (C++ on rcl) for every method, the
    other executors rclpy's; the hot path completes through the mixed processes, and E0's
    records (its callbacks, its GPU requests' stages, its OS priority) are there as from the
    rclpy process. ROS 2's E0 picks in rclcpp's order at SCHED_OTHER, PiCAS's and PAAM's by
    priority at E0's OS priority."""
    from paam_experiments.case_study2 import cpp as case_study2_cpp
    try:
        case_study2_cpp.program()
    except FileNotFoundError as err:
        if os.environ.get("PAAM_REQUIRE_ROS") == "1":
            raise
        pytest.skip(str(err))
    data = _cs2_quick(tmp_path, "--setups", "4ST", "--methods", "ros2,picas,paam",
                      "--e0-executor", "cpp")
    assert data["params"]["e0_executor"] == "cpp"
    assert "4ST's E0 in C++ on rcl" in (tmp_path / "summary.txt").read_text()
    ros2 = _cs2_hot_path_ran(data, "4ST", "ROS 2")
    e0 = [r for r in ros2["rt"] if r.startswith("E0:")]
    assert len(e0) == 1 and "rclcpp's SingleThreadedExecutor order" in e0[0], ros2["rt"]
    assert "SCHED_OTHER nice 0" in e0[0], e0
    for method in ("PiCAS", "PAAM"):
        s = _cs2_hot_path_ran(data, "4ST", method)
        e0 = [r for r in s["rt"] if r.startswith("E0:")]
        assert len(e0) == 1 and "C++ executor" in e0[0] and "rclcpp" not in e0[0], s["rt"]
        assert s["thread_cpus"]["E0"], s["thread_cpus"]
        # every callback of E0 on record: about nine per instance from the due time
        e0_calls = s["hot_executor_from_due"]
        assert e0_calls["instances"] >= 10
        assert e0_calls["outside_split"]["callbacks"]["p50"] >= 8, e0_calls["outside_split"]
    paam = data["results"]["4ST"]["PAAM"]
    # the hot path's GPU requests (chain priority 100) went through paamd, stamped
    assert paam["paam_gpu_request_ms_by_chain_priority"]["100"]["n"] >= 6 * paam["hot_path_ms"]["n"]

