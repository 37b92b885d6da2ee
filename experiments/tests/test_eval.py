"""``paam eval``: smoke runs of the evaluation experiments at CI scale (--quick).

These check that each experiment runs end to end and that what it writes is consistent with the
workload it ran (lower bounds only: timings on a shared CI machine are noisy).
"""
import json
import os
import subprocess
import sys
import time

import pytest


def _paam(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "paam.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_wait_strategies_measures_every_configuration(tmp_path):
    configs = ("paam-spin", "paam-suspend", "paam-hybrid", "direct-processes", "direct-threads")
    r = _paam("eval", "wait-strategies", "--quick", "--iterations", "120", "--kernel-ms", "0.3",
              "--configs", ",".join(configs), "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "summary.json").read_text())
    warmup = data["params"]["warmup"]
    assert set(data["results"]) == set(configs)
    for config, res in data["results"].items():
        req, frame, dev = res["request"], res["frame"], res["device"]
        assert req["n"] == 2 * (120 - warmup), config
        # The kernel occupies the device for 0.3 ms: no request can be faster than that, and a
        # frame of two units sharing one device takes at least both kernels.
        assert dev["min"] >= 0.29 * 1e3, config
        assert req["min"] >= dev["min"] * 0.99, config
        assert frame["min"] >= 2 * 0.29 * 1e3, config
        assert req["min"] <= req["mean"] <= req["max"]
        assert req["p2v"] == pytest.approx(req["max"] - req["min"])
    assert "MMET" in r.stdout and "direct-threads" in r.stdout and "paam-hybrid" in r.stdout
    for f in ("summary.csv", "histograms.png", "profiles.png", "raw/paam-spin.npz",
              "raw/paam-hybrid.npz"):
        assert (tmp_path / f).stat().st_size > 0


def test_wait_strategies_runs_concurrently_and_joins_runs_from_raw(tmp_path):
    a, b, joined = tmp_path / "a", tmp_path / "b", tmp_path / "joined"
    common = ("eval", "wait-strategies", "--units", "1", "--kernel-ms", "0.2", "--configs",
              "paam-suspend", "--no-plots")
    r = _paam(*common, "--iterations", "100", "--concurrent", "--out", str(a))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "paam-suspend: CPUs" in r.stdout
    assert "frames" in (a / "parts" / "paam-suspend" / "run.log").read_text()
    first = json.loads((a / "summary.json").read_text())
    assert first["results"]["paam-suspend"]["request"]["n"] == 100 - first["params"]["warmup"]
    assert (a / "raw" / "paam-suspend.npz").stat().st_size > 0
    r = _paam(*common, "--iterations", "60", "--out", str(b))
    assert r.returncode == 0, r.stdout + r.stderr
    second = json.loads((b / "summary.json").read_text())
    r = _paam("eval", "wait-strategies", "--from-raw", str(a), str(b), "--out", str(joined))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "paam-suspend: 2 runs joined" in r.stdout
    data = json.loads((joined / "summary.json").read_text())
    assert list(data["results"]) == ["paam-suspend"]  # the other configurations have no files
    req = data["results"]["paam-suspend"]["request"]
    # Each run's warm-up frames are dropped before the two are joined.
    assert req["n"] == (100 - first["params"]["warmup"]) + (60 - second["params"]["warmup"])
    assert req["max"] == pytest.approx(max(first["results"]["paam-suspend"]["request"]["max"],
                                           second["results"]["paam-suspend"]["request"]["max"]))
    assert (joined / "profiles.png").stat().st_size > 0
    r = _paam("eval", "wait-strategies", "--from-raw", str(tmp_path / "nothing"),
              "--out", str(joined))
    assert r.returncode != 0 and "not a folder" in r.stderr


def test_eval_rejects_an_unknown_configuration(tmp_path):
    r = _paam("eval", "wait-strategies", "--quick", "--configs", "paam-telepathy",
              "--out", str(tmp_path))
    assert r.returncode != 0
    assert "paam-telepathy" in r.stderr


def _stage_check(stages, names):
    for name in names:
        s = stages[name]
        assert 0 <= s["min"] <= s["mean"] <= s["max"], name
    # The stages tile the round trip: their means add up to its mean.
    total = sum(stages[n]["mean"] for n in names)
    assert total == pytest.approx(stages["round trip"]["mean"], rel=1e-6, abs=0.01)


def test_overhead_breaks_the_local_paths_into_stages(tmp_path):
    from paam_experiments.overhead import LOCAL_STAGES
    r = _paam("eval", "overhead", "--quick", "--paths", "local-cpp,local-python",
              "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "summary.json").read_text())
    names = [n for n, _a, _b in LOCAL_STAGES]
    py = data["results"]["local-python"]["stages"]
    _stage_check(py, names)
    assert py["overhead (round trip - kernel)"]["min"] > 0
    cpp = data["results"]["local-cpp"]["stages"]
    assert cpp["round trip"]["min"] > 0 and set(names) <= set(cpp)
    assert (tmp_path / "stages.png").stat().st_size > 0
    assert "queue + worker wake" in r.stdout


@pytest.mark.ros
def test_overhead_measures_the_remote_ros2_path(tmp_path):
    from paam_experiments.overhead import REMOTE_STAGES
    r = _paam("eval", "overhead", "--quick", "--paths", "remote-ros2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "summary.json").read_text())
    stages = data["results"]["remote-ros2"]["stages"]
    _stage_check(stages, [n for n, _a, _b in REMOTE_STAGES])
    assert stages["request transport (DDS)"]["min"] > 0


@pytest.mark.ros
def test_activation_latency_accounts_for_every_timer_expiry(tmp_path):
    r = _paam("eval", "activation", "--duration", "1.5", "--executors", "ros2,picas",
              "--scenarios", "all", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "summary.json").read_text())
    expected = 4 * 1.5 / 0.010  # 4 timers, 10 ms, 1.5 s
    for ex in ("ros2", "picas"):
        s = data["results"]["all"][ex]
        assert s["min"] >= 0, ex
        # Every expiry in the window is either measured or counted as missed.
        assert s["n"] + s["missed"] >= 0.9 * expected, (ex, s)
    assert "SCHED" in data["results"]["all"]["picas"]["rt"] or \
        "nice" in data["results"]["all"]["picas"]["rt"]
    assert (tmp_path / "histograms.png").stat().st_size > 0


@pytest.mark.ros
def test_case_study_1_runs_the_chains_in_ros2_processes(tmp_path):
    r = _paam("eval", "case-study-1", "--quick", "--chains", "chain1,be1",
              "--methods", "ros2,picas,paam", "--lock-memory", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "summary.json").read_text())
    scale, duration = data["params"]["scale"], data["params"]["duration"]
    # chain1: callbacks of 2 and 6 ms CPU, each then a 10 ms segment; be1 the same. Both have
    # a 120 ms period.
    own = (2 + 6 + 2 * 10) * scale
    expiries = duration / (0.120 * scale)
    for chain in ("chain1", "be1"):
        for method in ("ROS 2", "PiCAS", "PAAM"):
            s = data["results"][chain][method]
            assert s["n"] > 0, (chain, method)
            # An instance cannot finish before its own CPU time and segments have run.
            assert s["min"] >= 0.98 * own, (chain, method, s["min"])
            assert s["min"] <= s["p99"] <= s["max"], (chain, method)
            # Every timer expiry in the window either ran or is counted as skipped.
            assert s["n"] <= expiries + 2, (chain, method, s["n"], expiries)
            assert s["n"] + s["missed"] >= 0.9 * expiries, (chain, method, s, expiries)
    # PiCAS and PAAM run the priority-driven executors with an OS priority (SCHED_FIFO, or
    # the nice fallback where it is denied); ROS 2 the stock executors without one.
    for ex in ("ex1", "be1"):
        assert "SCHED_OTHER" in data["os_priorities"]["ROS 2"][ex]
        for method in ("PiCAS", "PAAM"):
            note = data["os_priorities"][method][ex]
            # (a best-effort executor gets SCHED_IDLE where SCHED_FIFO is denied)
            assert any(p in note for p in ("SCHED_FIFO", "nice", "SCHED_IDLE")), (method, ex, note)
    assert "PiCAS max/p99" in r.stdout
    # latency.csv's t_s counts from each method's start, which the summary gives on the
    # CLOCK_MONOTONIC scale: every instance ended after that start and before now.
    assert set(data["t0_ns"]) == {"ROS 2", "PiCAS", "PAAM"}
    assert all(0 < t < time.monotonic_ns() for t in data["t0_ns"].values())
    assert data["meta"].get("sched_rt_runtime_us") is None or "RT throttling" in r.stdout
    # what the CPU backend's device core is asked for, per bucket: chain1 in bucket 0, be1 in
    # another, each 2 x 10 ms of segments every 120 ms (times scale alike)
    demand = data["device_bucket_demand"]["gpu0"]
    assert demand[0] == pytest.approx(20 / 120) and sum(demand) == pytest.approx(40 / 120)
    assert "on the device core: buckets 0-" in r.stdout
    # rule R2 over two chains of six buckets: chain1 in 0, be1 in 3, the others empty; so the
    # lowest five hold no analysed chain and paamd keeps them off SCHED_FIFO (--fair-buckets
    # auto), and each device worker's OS scheduling is read back from /proc
    assert data["fair_buckets"] == {"gpu0": 5}
    workers = data["paamd_workers"]
    assert len(workers) == 6, workers
    for b in range(1, 6):
        assert workers[f"paamd-w0.{b}.0"].startswith("nice "), workers
    assert workers["paamd-w0.5.0"] == "nice 19"
    assert "paamd's device workers (bucket.lane): 0.0 " in r.stdout
    # --lock-memory: PiCAS's and PAAM's executors say whether their memory got locked; every
    # executor's page faults in the measured window are counted
    for method in ("PiCAS", "PAAM"):
        note = data["os_priorities"][method]["ex1"]
        assert "memory locked" in note or "not locked" in note or "mlockall denied" in note, note
    assert "memory" not in data["os_priorities"]["ROS 2"]["ex1"]
    # and so does paamd (its --lock-memory), among what it said at start
    assert any("memory locked" in line or "not locked" in line or "mlockall denied" in line
               for line in data["paamd_startup"]), data["paamd_startup"]
    for method in ("ROS 2", "PiCAS", "PAAM"):
        faults = data["page_faults"][method]["minor_major"]
        assert set(faults) == {"ex1", "be1"} and all(len(v) == 2 and min(v) >= 0
                                                   for v in faults.values()), faults
    assert "page faults of the executors in the measured run: ROS 2 " in r.stdout
    # and paamd's, in the same window, for the method it serves
    server = data["page_faults"]["PAAM"]["paamd"]
    assert len(server) == 2 and min(server) >= 0, server
    assert "paamd" not in data["page_faults"]["PiCAS"]
    assert f"; paamd {server[0]} minor / {server[1]} major)" in r.stdout
    assert data["bound_ms"]["chain1"] >= own
    assert data["epsilon_idle_us"]["min"] > 0
    # What paamd said at start (its poll window, pinning, denied settings) is kept.
    assert any("serving on" in line for line in data["paamd_startup"])
    # The bound's epsilon and rclpy cost come from a separate calibration run, not from the
    # run whose maxima are compared with it.
    assert data["calibration_s"] > 0 and "calibration run" in data["epsilon_from"]
    assert data["epsilon_ms"] == data["costs_for_bound"]["epsilon_ms"] > 0
    assert data["costs_for_bound"] != data["costs_in_measured_run"]
    assert data["costs_for_bound"]["chain"] == "chain1" and data["costs_for_bound"]["requests"] > 0
    stages = (tmp_path / "paam_stages.csv").read_text().splitlines()
    assert stages[0].startswith("run,chain,dispatch_us") and len(stages) > 10
    assert any(line.startswith("calibration,chain1,") for line in stages)
    assert any(line.startswith("measured,be1,") for line in stages)
    assert (tmp_path / "system_scaled.yaml").read_text().count("chain1") >= 1
    for f in ("fig9_max_latency.png", "fig10_distributions.png", "latency.csv"):
        assert (tmp_path / f).stat().st_size > 0
    # the host's /proc/stat each second of each measured run (not the calibration), every
    # instance placed quiet or noisy by the steal around it, chain1's above its bound counted
    lat_rows = (tmp_path / "latency.csv").read_text().splitlines()
    assert lat_rows[0] == "chain,method,latency_ms,t_s"
    host_rows = (tmp_path / "host_stat.csv").read_text().splitlines()
    assert host_rows[0].startswith("method,t_s,busy_ms,steal_ms,steal_ms_executor_cpus,"
                                   "steal_ms_cpu")
    for method in ("ROS 2", "PiCAS", "PAAM"):
        h = data["host"][method]
        assert h["samples"] >= duration, h
        assert sum(1 for line in host_rows if line.startswith(f"{method},")) == h["samples"]
        assert h["busy_ms_per_s"]["mean"] > 0
        assert 0 <= h["steal_ms_per_s_executor_cpus"]["max"] <= h["steal_ms_per_s"]["max"]
        # instances and samples on one clock: the samples span the recorded instances
        t_host = [float(line.split(",")[1]) for line in host_rows if line.startswith(f"{method},")]
        rows = [line.split(",") for line in lat_rows[1:] if f",{method}," in line]
        t_lat = [float(x[3]) for x in rows]
        # (instances end after the warm-up and within the run plus a generous margin: a t_s
        # on another clock would be far off)
        assert 0 < min(t_lat) <= max(t_lat) <= duration + 30, (min(t_lat), max(t_lat))
        # the samples cover the instances (one sample a second, so a second of slack at the
        # start)
        assert min(t_host) <= min(t_lat) + 2 and max(t_host) >= max(t_lat), (t_host, t_lat)
        for chain in ("chain1", "be1"):
            split = data["latency_by_host_steal"][method][chain]
            assert split["quiet"]["n"] + split["noisy"]["n"] == data["results"][chain][method][
                "n"], (method, chain, split)
        split = data["latency_by_host_steal"][method]["chain1"]
        bound = data["bound_ms"]["chain1"]
        assert split["bound_ms"] == bound
        over = sum(1 for x in rows if x[0] == "chain1" and float(x[2]) > bound)
        # (latency.csv keeps 3 decimals: an instance within 1 µs of the bound may differ)
        assert abs(split["above_bound"]["quiet"] + split["above_bound"]["noisy"] - over) <= 1
        # the collector's pauses, per executor process, and chain 1's instances against them
        g = data["gc"][method]
        assert set(g["by_executor"]) >= {"ex1", "be1"}, g
        c = g["critical"]
        assert c["chain"] == "chain1" and c["instances"] == data["results"]["chain1"][method]["n"]
        assert 0 <= c["during_a_collection"] <= c["instances"]
        assert abs(c["above_bound"] - over) <= 1
    assert "the host (/proc/stat each second)" in r.stdout
    assert "Python's collector (--gc default)" in r.stdout
    assert (tmp_path / "fig10b_host_steal.png").stat().st_size > 0


def _cpus(ranges: str) -> list[int]:
    out = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def test_cpu_ranges_round_trip():
    from paam_experiments.common.cpus import cpu_ranges
    assert cpu_ranges([14, 0, 1, 6, 7, 8, 9, 10, 11, 12, 13]) == "0-1,6-14"
    assert cpu_ranges([3]) == "3" and cpu_ranges([]) == ""
    assert cpu_ranges([5, 1, 2, 3, 9]) == "1-3,5,9"
    assert _cpus(cpu_ranges([0, 2, 3, 4, 7])) == [0, 2, 3, 4, 7]


def test_thread_cpus_counts_threads_by_their_affinity():
    """thread_cpus: this process's threads by the cores they may run on, a thread pinned
    to one core under that core, the calling thread left out."""
    import threading

    from paam_experiments.common.cpus import cpu_ranges, thread_cpus
    allowed = sorted(os.sched_getaffinity(0))
    core = allowed[-1]
    pinned, release = threading.Event(), threading.Event()

    def pin_and_wait():
        os.sched_setaffinity(0, {core})
        pinned.set()
        release.wait(10)

    t = threading.Thread(target=pin_and_wait)
    t.start()
    try:
        assert pinned.wait(10)
        before = thread_cpus(skip_self=False)
        counts = thread_cpus()
    finally:
        release.set()
        t.join()
    assert counts.get(str(core), 0) >= 1, counts
    assert sum(before.values()) == sum(counts.values()) + 1, (before, counts)
    if len(allowed) > 1:  # (the calling thread keeps the whole set)
        assert before.get(cpu_ranges(allowed), 0) >= 1, before


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


def test_dispatcher_priority_defaults_to_one_above_the_most_urgent_executor():
    import argparse
    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments
    p = argparse.ArgumentParser()
    add_server_arguments(p)
    args = p.parse_args([])
    assert server.dispatcher_args(args, 90) == ["--dispatcher-priority", "91"]
    assert args.dispatcher_priority == 91  # the summary's params record what paamd got
    assert server.dispatcher_args(p.parse_args([]), 99) == ["--dispatcher-priority", "99"]
    assert server.dispatcher_args(p.parse_args(["--dispatcher-priority", "60"]), 90) == [
        "--dispatcher-priority", "60"]
    with pytest.raises(SystemExit, match="1..99"):
        server.dispatcher_args(p.parse_args(["--dispatcher-priority", "100"]), 90)


def test_gpu_label_puts_the_hosts_gpus_on_one_line():
    from paam_experiments.common.machine import gpu_label
    assert gpu_label([]) == "unknown"
    assert gpu_label(["NVIDIA H100 80GB HBM3"]) == "NVIDIA H100 80GB HBM3"
    assert gpu_label(["NVIDIA H200"] * 2) == "2 x NVIDIA H200"
    assert gpu_label(["A", "B"]) == "A, B"


def test_server_poll_is_passed_only_with_cores_to_spare(capsys):
    import argparse

    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments

    p = argparse.ArgumentParser()
    add_server_arguments(p)
    assert server.server_poll_args(p.parse_args([]), [4, 5], 3) == []
    args = p.parse_args(["--server-poll-us", "always"])
    assert server.server_poll_args(args, [4, 5, 6], 3) == ["--poll-us", "always"]
    assert server.server_poll_label(args) == "always"
    # fewer cores left to paamd than polling threads: ignored, and the summary says so
    assert server.server_poll_args(args, [4, 5], 3) == []
    assert args.server_poll_us is None and server.server_poll_label(args) == "paamd's default"
    assert "ignored" in capsys.readouterr().out
    assert server.server_poll_args(p.parse_args(["--server-poll-us", "200"]), [1], 3) == []
    assert server.server_poll_args(p.parse_args(["--server-poll-us", "0"]), [], 3) == [
        "--poll-us", "0"]
    # --keep-awake leaves the cores of a polling paamd alone
    assert server.awake_cpus([0, 1, 2, 3], [2, 3], p.parse_args([])) == [0, 1, 2, 3]
    assert server.awake_cpus([0, 1, 2, 3], [2, 3],
                             p.parse_args(["--server-poll-us", "always"])) == [0, 1]
    for bad in ("-5", "soon", "1.5"):
        with pytest.raises(SystemExit):
            p.parse_args(["--server-poll-us", bad])


def test_server_spin_buckets_are_passed_only_with_cores_to_spare(capsys):
    import argparse

    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments

    p = argparse.ArgumentParser()
    add_server_arguments(p)
    assert server.spin_bucket_args(p.parse_args([]), 6, [4, 5]) == []
    args = p.parse_args(["--server-spin-buckets", "1"])
    assert server.spin_bucket_args(args, 6, [4, 5]) == ["--spin-buckets", "1"]
    assert server.server_poll_label(args) == "paamd's default, spin buckets 1"
    # at most the paamd's own buckets (the TPU stand-in's paamd has one)
    assert server.spin_bucket_args(p.parse_args(["--server-spin-buckets", "3"]), 1,
                                   [4, 5, 6, 7]) == ["--spin-buckets", "1"]
    # fewer cores than the threads that never sleep: ignored, and the summary says so
    assert server.spin_bucket_args(args, 6, [4]) == []
    assert args.server_spin_buckets is None and "ignored" in capsys.readouterr().out
    for bad in ("0", "-1", "x"):
        with pytest.raises(SystemExit):
            p.parse_args(["--server-spin-buckets", bad])


def test_server_pin_is_passed_only_with_a_core_per_thread(capsys):
    import argparse

    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments

    p = argparse.ArgumentParser()
    add_server_arguments(p)
    args = p.parse_args([])
    assert server.server_poll_args(args, [4, 5, 6], 3) == []
    assert server.server_pin_label(args) == "not pinned"
    args = p.parse_args(["--server-pin"])
    assert server.server_poll_args(args, [4, 5, 6], 3) == ["--thread-cpus", "4,5,6"]
    assert server.server_pin_label(args) == "one per core"
    # two paamds on the same cores take their own shares of them
    assert server.server_poll_args(args, [4, 5, 6], 3, pin_cpus=[6]) == ["--thread-cpus", "6"]
    args = p.parse_args(["--server-poll-us", "always", "--server-pin"])
    assert server.server_poll_args(args, [4, 5, 6, 7], 3) == [
        "--poll-us", "always", "--thread-cpus", "4,5,6,7"]
    # fewer cores than threads: pinning would put two on one core; ignored, and the summary
    # (params, label) says so
    assert server.server_poll_args(args, [4, 5], 3) == []
    assert args.server_pin is False and server.server_pin_label(args) == "not pinned"
    out = capsys.readouterr().out
    assert "--server-pin ignored" in out and "--server-poll-us always ignored" in out
    # the ignored option stays cleared for the second paamd of case study 2
    assert server.server_poll_args(args, [4, 5], 3, pin_cpus=[5]) == []
    assert capsys.readouterr().out == ""


def test_paamd_worker_count_follows_its_lanes():
    from paam_experiments.common import server

    # one per bucket; on cuda the lowest of several buckets has 4 lanes (--be-lanes default)
    assert server.paamd_workers("cuda", 1) == 1
    assert server.paamd_workers("cuda", 6) == 9
    assert server.paamd_workers("cpu", 6) == 6


def test_keep_awake_runs_an_idle_class_loop_per_core_while_the_block_runs():
    import os
    import time

    from paam_experiments.common import procs

    def settled(pid: int) -> bool:
        """The loop pinned to one of ``cpus`` and in the idle class (SCHED_IDLE, or nice 19
        where the idle class is refused)."""
        return (os.sched_getaffinity(pid) in ({c} for c in cpus)
                and (os.sched_getscheduler(pid) == getattr(os, "SCHED_IDLE", 5)
                     or os.getpriority(os.PRIO_PROCESS, pid) == 19))

    cpus = sorted(os.sched_getaffinity(0))[:2]
    with procs.keep_awake(cpus) as pids:
        assert len(pids) == len(cpus)
        deadline = time.monotonic() + 60  # (a spawned interpreter starts slowly on a busy host)
        while not all(settled(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(settled(pid) for pid in pids)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


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


def test_thread_sched_stat_counts_this_threads_cpu_time():
    import threading
    from paam_experiments.common import cpus
    st = cpus.ThreadSchedStat()
    cpu0, waited0 = st.read()
    if cpu0 < 0:
        pytest.skip("no /proc/thread-self/schedstat here")
    end = time.thread_time_ns() + 20_000_000  # 20 ms on the CPU, however loaded the machine
    while time.thread_time_ns() < end:
        pass
    cpu1, waited = st.read()
    assert cpu1 - cpu0 >= 20_000_000 and waited >= waited0 >= 0
    other = []
    t = threading.Thread(target=lambda: other.append(st.read()))
    t.start()
    t.join()
    assert other[0][0] < cpu1  # its own thread's counters, not this one's


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


PROC_STAT = """cpu  60 0 30 900 0 0 0 15 0 0
cpu0 10 0 10 400 0 0 0 5 0 0
cpu1 50 {nice} 20 500 7 3 2 {steal} 0 0
intr 12345
"""


def test_proc_stat_is_parsed_per_cpu_into_busy_and_steal():
    from paam_experiments.common import host
    got = host.parse_proc_stat(PROC_STAT.format(nice=1, steal=10))
    # busy: user + nice + system + irq + softirq (idle and iowait are not busy)
    assert got == {0: (20, 5), 1: (76, 10)}


def test_host_stat_samples_proc_stat_and_gives_per_interval_deltas(tmp_path):
    import os
    import threading
    import time

    import numpy as np
    from paam_experiments.common.host import HostStat
    f = tmp_path / "stat"
    f.write_text(PROC_STAT.format(nice=0, steal=10))
    host = HostStat(interval=0.02, path=str(f))
    stop = threading.Event()
    steps = [0]

    def tick():  # cpu1 gains 3 ticks busy and 2 ticks stolen a step
        while not stop.wait(0.05):
            steps[0] += 1
            n = steps[0]
            (tmp_path / "next").write_text(PROC_STAT.format(nice=3 * n, steal=10 + 2 * n))
            os.replace(tmp_path / "next", f)  # whole, as the kernel's file reads
    with host:
        th = threading.Thread(target=tick)
        th.start()
        # until the file moved 4 steps and the sampler took 5 samples (a busy host may delay
        # either thread)
        deadline = time.monotonic() + 60
        while (steps[0] < 4 or len(host.series()[0]) < 5) and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        th.join()
    t, cpus, busy, steal = host.series()
    assert cpus == [0, 1] and len(t) >= 5 and (np.diff(t) > 0).all()
    ms = 1000.0 / os.sysconf("SC_CLK_TCK")
    assert busy[:, 0].sum() == 0 and steal[:, 0].sum() == 0
    # from the sample on entry (before the first step) to the one on exit (after the last),
    # every step counted once: 2 stolen and 3 busy ticks each
    n = round(steal[:, 1].sum() / (2 * ms))
    assert n == steps[0] >= 4 and busy[:, 1].sum() == pytest.approx(3 * n * ms)
    assert host.result().t_ns.tolist() == t.tolist() and host.result().error == ""
    # no /proc/stat: an empty series and the reason, not an exception
    missing = HostStat(path=str(tmp_path / "none"))
    with missing:
        pass
    assert missing.error and len(missing.series()[0]) == 0


def test_steal_around_an_instance_and_the_split_by_steal():
    import numpy as np
    from paam_experiments.common import host
    s = 1_000_000_000
    t = np.array([1, 2, 3, 4, 5, 6, 7, 8]) * s           # interval ends
    steal = np.array([[0, 0], [0, 0], [0, 0], [300, 100], [0, 0], [0, 0], [0, 0], [0, 0]])
    ends = np.array([int(1.5 * s), int(3.5 * s), int(6.9 * s), int(7.5 * s)])
    spans = np.array([100.0, 100.0, 2500.0, 100.0])      # the third spans 4.4..6.9 s
    got = host.steal_around(ends, spans, t, steal)
    # one interval of slack each side: 3.5 s sees the interval ending at 4 s (400 ms)
    assert got.tolist() == [0.0, 400.0, 400.0, 0.0]
    split = host.split_by_steal([70.0, 90.0, 95.0, 72.0], got)
    assert split["quiet"]["n"] == 2 and split["quiet"]["max"] == 72.0
    assert split["noisy"]["n"] == 2 and split["noisy"]["max"] == 95.0
    assert split["correlation"] > 0.9
    assert np.isnan(host.steal_around(ends, spans, np.zeros(0, np.int64),
                                        np.zeros((0, 2)))).all()


def test_host_summary_and_rows_count_each_executor_core_once():
    import numpy as np
    from paam_experiments.common import host
    s = 1_000_000_000
    r = {"host_t_ns": np.array([2, 3]) * s, "host_cpus": [0, 1, 2],
         "host_busy_ms": np.array([[500.0, 100, 0], [900, 0, 0]]),
         "host_steal_ms": np.array([[10.0, 20, 30], [0, 0, 70]]), "host_error": ""}
    # two executors mapped onto core 0 (a small machine), one on a core not sampled
    h = host.host_summary(r, [0, 0, 7])
    assert h["samples"] == 2 and h["steal_ms_per_s"]["max"] == 70
    assert h["steal_ms_per_s_executor_cpus"]["max"] == 10 and h["busy_ms_per_s"]["mean"] == 750
    # per CPU: mean busy 700 / 50 / 0 ms/s; a vCPU counts as used from 50 ms/s busy on
    assert h["per_cpu"][1] == {"busy_ms_per_s": 50.0, "steal_ms_per_s": 10.0}
    assert h["per_cpu"][2] == {"busy_ms_per_s": 0.0, "steal_ms_per_s": 50.0}
    assert h["active_cpus"] == [0, 1]
    assert host.steal_text(h) == "65 / 70 (5 / 10), 2 vCPUs used, 0.75 CPUs busy"
    rows = host.host_rows(r, [0, 0], s)
    assert rows[0] == {"t_s": 1.0, "busy_ms": 600.0, "steal_ms": 60.0,
                       "steal_ms_executor_cpus": 10.0, "steal_ms_cpu0": 10.0,
                       "steal_ms_cpu1": 20.0, "steal_ms_cpu2": 30.0, "busy_ms_cpu0": 500.0,
                       "busy_ms_cpu1": 100.0, "busy_ms_cpu2": 0.0}
    # no samples (no /proc/stat): the reason, no rows
    none = {"host_t_ns": np.zeros(0, np.int64), "host_error": "/proc/stat: missing"}
    assert host.host_summary(none, [0]) == {"error": "/proc/stat: missing"}
    assert host.host_rows(none, [0], 0) == []


def test_case_study_1_counts_instances_above_the_bound_in_quiet_and_noisy_seconds():
    import numpy as np
    from paam_experiments.case_study1.kpis import latency_by_steal
    from paam_experiments.case_study1.runner import MethodRun
    from paam_experiments.common.host import HostSeries
    s = 1_000_000_000
    steal = np.array([[0], [0], [0], [400], [0], [0], [0], [0]], dtype=float)
    r = MethodRun(latency_ms={"chain1": np.array([5.0, 9.0, 9.5, 4.0])},
                  end_ns={"chain1": (np.array([1.5, 3.5, 7.5, 7.6]) * s).astype(np.int64)},
                  host=HostSeries(np.arange(1, 9) * s, [0], np.zeros_like(steal), steal))
    got = latency_by_steal(r, "chain1", 8.0)
    # the instance ending at 3.5 s sees the 400 ms stolen in the interval ending at 4 s
    assert got["quiet"]["n"] == 3 and got["noisy"]["n"] == 1 and got["noisy"]["max"] == 9.0
    assert got["bound_ms"] == 8.0 and got["above_bound"] == {"quiet": 1, "noisy": 1}
    assert "above_bound" not in latency_by_steal(r, "chain1", None)
    # a run the host was not sampled in: every instance in neither part
    unsampled = latency_by_steal(MethodRun(latency_ms=r.latency_ms, end_ns=r.end_ns),
                                 "chain1", 8.0)
    assert unsampled["quiet"]["n"] == unsampled["noisy"]["n"] == 0


def test_case_study_2_marks_hot_path_subscriptions():
    from paam_experiments.case_study2 import graph as cs2
    assert cs2.hot_subscription("PointCloudFusion<-PointsTransformerRear")
    assert cs2.hot_subscription("EuclideanClusterDetector<-RayGroundFilter")
    assert not cs2.hot_subscription("EuclideanClusterDetector<-EuclideanClusterSettings")
    assert not cs2.hot_subscription("BehaviorPlanner<-ObjectCollisionEstimator")


def test_join_child_reports_a_failed_or_hung_worker_and_leaves_nothing_running(tmp_path):
    from paam_experiments.common import procs

    class Proc:  # the part of multiprocessing.Process that join_child uses
        def __init__(self, hangs):
            self.alive, self.joined, self.killed = hangs, None, False

        def join(self, timeout):
            self.joined = timeout

        def is_alive(self):
            return self.alive and not self.killed

        def kill(self):
            self.killed = True

    path = str(tmp_path / "worker.npz")
    procs.join_child(Proc(False), path, "E0", 5.0)  # finished, no note: fine
    hung = Proc(True)
    with pytest.raises(SystemExit, match="E0 did not finish"):
        procs.join_child(hung, path, "E0", -3.0)
    assert hung.killed and hung.joined == 1.0  # a deadline already past still waits 1 s
    try:
        raise ValueError("no GPU")
    except ValueError as exc:
        procs.child_failed(path, exc)
    with pytest.raises(SystemExit, match=r"E0 failed: ValueError: no GPU\n(.|\n)*Traceback"):
        procs.join_child(Proc(False), path, "E0", 5.0)


def test_gc_pauses_records_collections_and_applies_the_mode():
    import gc

    import numpy as np

    from paam_experiments.common import collector, report
    was = gc.isenabled()
    with collector.GcPauses("off") as p:
        assert not gc.isenabled()
        gc.collect(2)  # an explicit collection still runs, and is recorded
    assert gc.isenabled() == was
    a = p.array()
    assert a.shape == (1, 3) and a[0, 0] == 2 and a[0, 2] > 0
    with collector.GcPauses("freeze"):
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    s = collector.gc_summary(a)
    assert s["gen2"]["n"] == 1 and s["gen0"]["n"] == 0 and s["gen2"]["max_ms"] > 0
    with pytest.raises(ValueError):
        collector.GcPauses("sometimes")
    # ns of pauses inside each interval: partly, wholly, not at all
    pauses = np.array([[0, 100, 50], [2, 400, 100]])
    got = collector.overlaps([120, 0, 200], [300, 1000, 300], pauses)
    assert got.tolist() == [30, 150, 0]
    # instances as steal_around takes them (end ns, length ms): one holds a 0.5 ms collection
    c, hit = collector.gc_instances([2_000_000, 3_000_000], [1.5, 0.5],
                                 np.array([[2, 1_000_000, 500_000]]))
    assert hit.tolist() == [True, False]
    assert c["instances"] == 2 and c["during_a_collection"] == 1
    assert c["collection_ms_inside"]["max"] == 0.5
    assert collector.gc_line([s, s]) == "0/0/2, longest " + report.fmt(s["gen2"]["max_ms"], 2)


def test_server_cores_confines_paamd_to_the_first_n_spare_cores(capsys):
    import argparse

    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments

    p = argparse.ArgumentParser()
    add_server_arguments(p)
    args = p.parse_args([])
    assert server.server_cores(args, [0, 1, 6, 7]) == [0, 1, 6, 7]
    assert server.server_pin_label(args) == "not pinned"
    args = p.parse_args(["--server-cores", "2"])
    assert server.server_cores(args, [0, 1, 6, 7]) == [0, 1]
    assert server.server_pin_label(args) == "not pinned, on 2 cores"
    # with too few cores paamd gets them all, and the summary no longer claims the option
    args = p.parse_args(["--server-cores", "3"])
    assert server.server_cores(args, [6, 7]) == [6, 7]
    assert args.server_cores is None and server.server_pin_label(args) == "not pinned"
    assert "--server-cores 3: only 2 core(s)" in capsys.readouterr().out
    # confined cores then bound pinning: fewer cores than threads, so no pinning
    args = p.parse_args(["--server-cores", "2", "--server-pin"])
    assert server.server_poll_args(args, server.server_cores(args, [0, 1, 6, 7]), 3) == []
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(SystemExit):
            p.parse_args(["--server-cores", bad])


def test_server_cuda_wait_reaches_a_cuda_paamd_only_and_the_summary_says_so(tmp_path):
    import argparse
    import subprocess

    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments
    from paam.testing import find_paamd

    p = argparse.ArgumentParser()
    add_server_arguments(p)
    p.add_argument("--backend", default="cpu")
    args = p.parse_args([])
    assert server.cuda_wait_args(args) == [] and server.server_pin_label(args) == "not pinned"
    args = p.parse_args(["--server-cuda-wait", "block", "--backend", "cuda"])
    assert server.cuda_wait_args(args) == ["--cuda-wait", "block"]
    assert server.server_pin_label(args) == "not pinned, CUDA wait block"
    # the CPU backend has no CUDA workers: nothing passed, nothing claimed
    args = p.parse_args(["--server-cuda-wait", "block"])
    assert server.cuda_wait_args(args) == [] and server.server_pin_label(args) == "not pinned"
    args = p.parse_args(["--server-cuda-wait", "nap:200", "--backend", "cuda"])
    assert server.cuda_wait_args(args) == ["--cuda-wait", "nap:200"]
    # none given: paamd's default (or $PAAM_CUDA_WAIT's), named as such
    args = p.parse_args(["--backend", "cuda"])
    assert server.cuda_wait_args(args) == []
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PAAM_CUDA_WAIT", raising=False)
        assert server.server_pin_label(args) == "not pinned, CUDA wait nap (paamd's default)"
        mp.setenv("PAAM_CUDA_WAIT", "block")
        assert server.server_pin_label(args) == "not pinned, CUDA wait block (paamd's default)"
        # the direct methods' clients spin as a plain CUDA program does, unless told
        direct = ["PiCAS", "PAAM"]
        assert server.direct_wait_label(args, direct) == ("direct clients' CUDA wait: block "
                                                          "($PAAM_CUDA_WAIT)")
        mp.delenv("PAAM_CUDA_WAIT")
        assert server.direct_wait_label(args, direct) == ("direct clients' CUDA wait: spin "
                                                          "(CUDA's default for one context)")
        assert server.direct_wait_label(p.parse_args([]), direct) == ""  # the cpu backend
        assert server.direct_wait_label(args, ["PAAM"]) == ""  # no direct client ran
    bad_forms = ("sleepy", "nap:", "nap:0", "nap:10001", "nap:05", "nap:1.5", "nap:-5", "Block")
    for bad in bad_forms:
        with pytest.raises(SystemExit):
            p.parse_args(["--server-cuda-wait", bad])
    # paamd takes the same forms (checked before any GPU is looked for) and refuses every one
    # of these, quoting it: the two checks agree
    for bad in bad_forms:
        r = subprocess.run([find_paamd(), "--cuda-wait", bad], capture_output=True, text=True,
                           timeout=10)
        assert r.returncode == 2 and f"got '{bad}'" in r.stderr and "nap:US" in r.stderr
    usage = subprocess.run([find_paamd(), "--help"], capture_output=True, text=True,
                           timeout=10).stdout
    assert "--cuda-wait MODE" in usage and f"else {server.PAAMD_CUDA_WAIT})" in usage


def test_machine_line_says_whether_the_kernel_throttles_sched_fifo(tmp_path):
    from paam_experiments.common import machine

    (tmp_path / "sched_rt_period_us").write_text("1000000\n")
    (tmp_path / "sched_rt_runtime_us").write_text("950000\n")
    assert machine.rt_throttling(tmp_path) == (950000, 1000000)
    meta = {"cpu": "x", "nproc": 2, "kernel": "6.18", "backend": "cpu", "date": "d",
            "sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000}
    assert "RT throttling 950000 of 1000000 us" in machine.machine_line(meta)
    (tmp_path / "sched_rt_runtime_us").write_text("-1\n")
    assert machine.rt_throttling(tmp_path) == (-1, 1000000)
    assert "RT throttling off" in machine.machine_line(dict(meta, sched_rt_runtime_us=-1))
    assert machine.rt_throttling(tmp_path / "missing") is None
    del meta["sched_rt_runtime_us"]
    assert "throttling" not in machine.machine_line(meta)


def test_device_core_line_says_when_the_sched_fifo_buckets_exceed_the_rt_budget():
    from paam.analysis.bounds import bucket_demand
    from paam.analysis.model import load_system
    from paam_experiments.case_study1.config import DEFAULT_SYSTEM
    from paam_experiments.common.machine import device_core_line

    spec = load_system(DEFAULT_SYSTEM)
    # rule R2 puts be1 (rank 6 of 8) in bucket 4 of 6: the SCHED_FIFO buckets 0-4 then declare
    # chains 1-6 (85%) and be1 (1/6 of the unit)
    demand = bucket_demand(spec)["gpu0"]
    assert len(demand) == 6 and demand[4] == pytest.approx(20 / 120)
    assert sum(demand[:-1]) == pytest.approx(1.0139, abs=1e-4)
    throttled = {"sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000}
    line = device_core_line({"gpu0": demand}, throttled)
    assert "101.4%" in line and "over the kernel's RT budget (950000 of 1000000 us)" in line
    lifted = dict(throttled, sched_rt_runtime_us=-1)
    assert "over the kernel" not in device_core_line({"gpu0": demand}, lifted)
    assert "over the kernel" not in device_core_line({"gpu0": demand}, {})
    # be1's bucket and be2's hold only best-effort chains: kept off SCHED_FIFO (paamd
    # --fair-buckets 2), the SCHED_FIFO buckets declare chains 1-6 alone, inside the budget
    line = device_core_line({"gpu0": demand}, throttled, {"gpu0": 2})
    assert "the SCHED_FIFO ones (0-3) 84.7%" in line and "over the kernel" not in line
    assert "(none) 0.0%" in device_core_line({"gpu0": demand}, throttled, {"gpu0": 6})
    assert "(all) 119.6%" in device_core_line({"gpu0": demand}, throttled, {"gpu0": 0})


def test_case_study_1_keeps_the_best_effort_buckets_off_sched_fifo():
    import argparse

    from paam.analysis.model import load_system
    from paam_experiments.case_study1 import cli
    from paam_experiments.case_study1.config import DEFAULT_SYSTEM
    from paam_experiments.case_study1.system import fair_buckets

    spec = load_system(DEFAULT_SYSTEM)
    p = argparse.ArgumentParser()
    cli.add_arguments(p)

    def fair(*argv):
        c = cli.config_from_args(p.parse_args(list(argv)))
        return fair_buckets(spec, c.backend, c.rt, c.fair_buckets)

    assert p.parse_args([]).fair_buckets == "auto"
    assert fair() == {"gpu0": 2}  # be1's and be2's buckets
    assert fair("--fair-buckets", "1") == {"gpu0": 1}
    assert fair("--fair-buckets", "0") == {"gpu0": 0}
    # nothing to choose where no bucket gets SCHED_FIFO or the workers are CUDA's
    assert fair("--rt", "nice") is None
    assert fair("--backend", "cuda") is None
    with pytest.raises(SystemExit, match="gpu0 has 6 bucket"):
        fair("--fair-buckets", "7")
    for bad in ("-1", "two", "1.5", ""):
        with pytest.raises(SystemExit):
            p.parse_args(["--fair-buckets", bad])
    # with one bucket there is nothing below the critical chains: auto keeps it SCHED_FIFO,
    # as paamd does
    spec.accelerators["gpu0"].buckets = 1
    assert fair() == {"gpu0": 0}


def test_case_study_1_config_is_the_command_line_and_its_params_keep_their_names():
    """The command line becomes one Config (paamd's options in its ServerOptions); --quick
    scales it down; summary.json's params name every option by its command-line dest, as a
    Namespace's vars would, with what the run cleared or set."""
    import argparse

    from paam_experiments.case_study1 import cli
    from paam_experiments.common import server

    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    ns = p.parse_args(["--quick", "--backend", "cuda", "--server-poll-us", "always",
                       "--chains", "chain1"])
    c = cli.config_from_args(ns)
    assert c.backend == c.server.backend == "cuda" and c.server.server_poll_us == "always"
    c.apply_quick()
    assert (c.scale, c.duration, c.calibration, c.chains) == (0.2, 2.5, 1.5, "chain1")
    assert c.check() == ["ROS 2", "PiCAS", "PAAM"] and c.chain_names() == ["chain1"]
    # an option this machine has no cores for is cleared where the summary reads it
    assert server.server_poll_args(c.server, [4], 3) == []
    assert server.dispatcher_args(c.server, 90) == ["--dispatcher-priority", "91"]
    params = c.params()
    expected = {k: v for k, v in vars(ns).items()}
    expected.update(command="eval", experiment="case-study-1", scale=0.2, duration=2.5,
                    calibration=1.5, server_poll_us=None, dispatcher_priority=91)
    assert list(params) == ["command", "experiment"] + list(vars(ns)) and params == expected
    with pytest.raises(SystemExit, match="--methods"):
        cli.config_from_args(p.parse_args(["--methods", "ros"])).check()


def test_paamd_refuses_fair_buckets_it_cannot_apply():
    from paam.testing import find_paamd

    for argv, said in ((["--buckets", "2", "--fair-buckets", "3"], "more than the 2 bucket"),
                       (["--backend", "cuda", "--fair-buckets", "1"], "for the cpu backend"),
                       (["--fair-buckets", "-1"], "0 or more"),
                       (["--fair-buckets", "x"], "needs an integer")):
        r = subprocess.run([find_paamd(), *argv], capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and said in r.stderr, (argv, r.stderr)
    assert "--fair-buckets N" in subprocess.run(
        [find_paamd(), "--help"], capture_output=True, text=True, timeout=10).stdout


def test_lock_memory_locks_where_permitted_and_says_why_not_elsewhere():
    # in a child process: mlockall(MCL_FUTURE) would stay with the test process
    code = ("import os, resource; from paam.ros import rt\n"
            "if os.environ.get('FAKE_LIMIT'):\n"
            "    rt._may_lock_without_limit = lambda: False\n"
            "    resource.getrlimit = lambda _r: (65536, 65536)\n"
            "line = rt.lock_memory(); print(line)\n"
            "print([l for l in open('/proc/self/status') if l.startswith('VmLck')][0])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    line, vmlck = r.stdout.splitlines()[:2]
    locked_kb = int(vmlck.split()[1])
    if line.startswith("memory locked"):
        assert locked_kb > 0, vmlck
    else:  # a machine that refuses it: said, and nothing locked
        assert ("mlockall denied" in line or "not locked" in line) and locked_kb == 0, line
    assert "malloc keeps freed memory" in line
    # a user under a finite memlock limit: not attempted (a locked process could not grow past
    # it), and the line says how to allow it
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, FAKE_LIMIT="1"))
    line, vmlck = r.stdout.splitlines()[:2]
    assert line.startswith("memory not locked: RLIMIT_MEMLOCK is 64 kB") and "ulimit -l" in line
    assert int(vmlck.split()[1]) == 0


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


def test_methods_parse_to_names_in_the_given_order_and_a_bad_key_exits():
    from paam_experiments.common import methods

    assert methods.parse_methods("paam, ros2") == ["PAAM", "ROS 2"]
    assert methods.parse_methods("ros2,picas,paam") == list(methods.METHODS)
    for bad in ("", ",", "ros", "paam,PiCAS"):
        with pytest.raises(SystemExit, match="choose from ros2, picas, paam"):
            methods.parse_methods(bad)


def test_case_study_2_spec_for_the_cpp_e0_follows_the_reference_system(tmp_path):
    """--e0-executor cpp: the C++ program's spec comes from case_study2's description of the
    system: E0's eight nodes in its order, ten callbacks with their priorities (the settings
    connection of the cluster detector at the settings chain's), the hot path's ids."""
    from dataclasses import replace

    from paam_experiments.case_study2 import cpp as case_study2_cpp
    from paam_experiments.case_study2 import graph as cs2
    from paam_experiments.case_study2.config import ProcessConfig
    cfg = ProcessConfig(**{
           "topic_prefix": "/t", "method": "paam", "backend": "cuda", "wait": "suspend",
           "gpu_ms": 2.5, "tpu_ms": 5.0, "scale": 1.0, "warmup_s": 2.0, "duration_s": 150.0,
           "device_cpu": -1, "tpu_cpu": 15, "direct_keeps_priority": False,
           "gpu_socket": "/s/gpu", "tpu_socket": None, "request_priority": "chain",
           "executors": {"E0": cs2.EXECUTORS[0][3]}})
    lines = case_study2_cpp.spec_text(cfg, str(tmp_path / "out.json")).splitlines()
    nodes = [ln.split() for ln in lines if ln.startswith("node ")]
    assert [n[2] for n in nodes] == list(cs2.EXECUTORS[0][3])
    assert all(n[5] == "1" for n in nodes)  # every E0 node runs a GPU segment
    assert [n[2] for n in nodes if n[6] == "1"] == [cs2.TPU_NODE]
    cbs = [ln.split() for ln in lines if ln.startswith("cb ")]
    assert len(cbs) == 10
    by_topic = {(int(c[1]), c[3]): c for c in cbs}
    settings = by_topic[(cs2.NODE_IDS["EuclideanClusterDetector"], "EuclideanClusterSettings")]
    assert settings[2] == "1" and settings[-1] == "EuclideanIntersection"
    assert (int(settings[7]), int(settings[8]), int(settings[9])) == (
        40, cs2.callback_priority("EuclideanClusterDetector", 1)[1], 40)
    fusion = [c for c in cbs if int(c[1]) == cs2.NODE_IDS["PointCloudFusion"]]
    assert [float(c[5]) for c in fusion] == [cs2.FUSE] * 2
    assert [float(c[6]) for c in fusion] == [cs2.CACHE] * 2
    assert f"estimator {cs2.NODE_IDS['ObjectCollisionEstimator']}" in lines
    assert "tpu_socket -" in lines and "drop_tpu 0" in lines  # (PAAM: through paamd)
    # PiCAS invokes directly: the TPU stand-in's kernel on the callback's thread, dropped
    picas = case_study2_cpp.spec_text(replace(cfg, method="picas"), "x").splitlines()
    assert "drop_tpu 1" in picas and "drop_gpu 0" in picas
    # the hot path's wait: --wait unless --hot-wait says otherwise
    assert "hot_wait suspend" in lines and f"hot_priority {cs2.HOT_PRIORITY}" in lines
    spin = case_study2_cpp.spec_text(replace(cfg, hot_wait="spin"), "x").splitlines()
    assert "wait suspend" in spin and "hot_wait spin" in spin


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


def test_case_study_2_cpp_e0_program_missing_says_how_to_build_it(tmp_path, monkeypatch):
    from paam_experiments.case_study2 import cpp as case_study2_cpp
    not_exe = tmp_path / "paam_cs2_executor"
    not_exe.write_text("")
    monkeypatch.setenv("PAAM_CS2_EXECUTOR", str(not_exe))
    with pytest.raises(FileNotFoundError, match="not an executable file"):
        case_study2_cpp.program()
    monkeypatch.delenv("PAAM_CS2_EXECUTOR")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="make ros"):
        case_study2_cpp.program()


def test_case_study_2_cpp_e0_that_fails_loudly_is_reported_with_its_stderr_not_hung(
        tmp_path, monkeypatch):
    """A program that writes more to stderr than a pipe holds (Fast DDS's warnings over a long
    run) and then fails: its status and the end of its stderr are reported at once, nothing
    blocks on an unread pipe, and the whole of it stays in a file beside the records."""
    from paam_experiments.case_study2 import cpp as case_study2_cpp
    from paam_experiments.case_study2 import graph as cs2
    from paam_experiments.case_study2.config import ProcessConfig
    fake = tmp_path / "fake_executor"
    fake.write_text("#!/bin/sh\nhead -c 300000 /dev/zero | tr '\\0' x >&2\n"
                    "echo >&2; echo 'error: rcl_init: no DDS' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PAAM_CS2_EXECUTOR", str(fake))
    monkeypatch.setattr(case_study2_cpp, "_READY_TIMEOUT_S", 20.0)
    cpu = sorted(os.sched_getaffinity(0))[0]
    cfg = ProcessConfig(**{
           "topic_prefix": "/t", "method": "paam", "backend": "cpu", "wait": "suspend",
           "gpu_ms": 1.0, "tpu_ms": 1.0, "scale": 1.0, "warmup_s": 1.0, "duration_s": 1.0,
           "device_cpu": -1, "tpu_cpu": None, "direct_keeps_priority": False,
           "gpu_socket": "/s/gpu", "tpu_socket": "/s/tpu", "request_priority": "chain",
           "executors": {"E0": cs2.EXECUTORS[0][3]}, "helper_cpus": [cpu],
           "cpus": {"E0": cpu}})
    path = str(tmp_path / "e0")
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="(?s)exited with status 3.*error: rcl_init: no DDS"):
        case_study2_cpp.run(cfg, path, sync={})
    assert time.monotonic() - t0 < 15.0
    assert (tmp_path / "e0.stderr").stat().st_size > 300000


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


def test_case_study_1_report_keeps_its_files_and_summary_schema(tmp_path):
    """The report of synthetic runs (no ROS 2 needed): the bound fed by the calibration run's
    epsilon, every file written, summary.json's keys in their order, the table and figures."""
    import numpy as np

    from paam_experiments.case_study1 import plots, report
    from paam_experiments.case_study1.config import Config
    from paam_experiments.case_study1.kpis import Outcome, compute_bound, compute_kpis
    from paam_experiments.case_study1.runner import MethodRun, Placement, Runs
    from paam_experiments.case_study1.system import scaled_system, select_chains
    from paam_experiments.common.host import HostSeries

    config = Config(scale=0.2, duration=2.0, methods="ros2,paam", chains="chain1,be1",
                    out=str(tmp_path))
    methods = config.check()
    spec, mapping = scaled_system(config.system, config.scale, [0])
    mapping = select_chains(spec, mapping, config.chain_names())
    s = 1_000_000_000

    def run(t0, lat_ms, stage_us):
        ends = {c: (t0 + np.arange(1, 4) * s // 2).astype(np.int64) for c in ("chain1", "be1")}
        steal = np.array([[0.0], [10.0], [0.0]])
        return MethodRun(
            t0_ns=t0, latency_ms={c: np.array(lat_ms) for c in ends},
            gap_ms={c: np.array([0.2, 0.3, 0.1]) for c in ends}, end_ns=ends,
            missed={"chain1": 0, "be1": 1}, executor_of={"chain1": "ex1", "be1": "be1"},
            rt={"ex1": "SCHED_FIFO 90", "be1": "SCHED_IDLE"},
            gc_ns={"ex1": np.zeros((0, 3), np.int64), "be1": np.zeros((0, 3), np.int64)},
            faults={"ex1": [1, 0], "be1": [2, 0]}, body_excess_ms=[0.1, 0.4],
            stages_us=np.array([[10.0, 20, 5, 15], [12, 30, 5, 20]]) * stage_us,
            stage_chain=["chain1", "be1"],
            host=HostSeries(t0 + np.arange(1, 4) * s, [0], np.full((3, 1), 500.0), steal))

    runs = Runs(results={"ROS 2": run(10 * s, [7.0, 8.0, 9.0], 0),
                         "PAAM": run(20 * s, [6.0, 6.5, 7.0], 1)},
                calibration_run=run(15 * s, [6.0, 6.0, 6.0], 2),
                idle_overhead_us={"max": 40.0, "mean": 20.0})
    bound = compute_bound(config, spec, runs)
    # epsilon: chain1's largest request overhead in the calibration run, (10+20+5+15) x 2 µs
    assert bound.epsilon_ms == pytest.approx(0.1) and "calibration run" in bound.epsilon_from
    assert bound.costs.chain == "chain1" and bound.costs.requests == 1
    assert bound.delta_ms == pytest.approx(0.4 + 0.3 / 2)
    placement = Placement(cpus=[0], dev=1, mapping=mapping, server_cpus=[])
    kpis = compute_kpis(config, spec, methods, runs, bound, placement)
    assert kpis.chains["be1"]["ROS 2"]["missed"] == 1 and kpis.chains["chain1"]["PAAM"]["n"] == 3
    o = Outcome(config=config, spec=spec, methods=methods, meta={
        "date": "d", "nproc": 2, "cpu": "x", "kernel": "k", "backend": "cpu"},
        placement=placement, fair={"gpu0": 5}, runs=runs, bound=bound, kpis=kpis)
    text = report.write_files(o, tmp_path)
    assert "ROS 2 max/p99" in text and "PAAM max/p99" in text and "PiCAS" not in text
    data = json.loads((tmp_path / "summary.json").read_text())
    assert list(data) == [
        "meta", "params", "direct_wait", "cpu_mapping", "device_cpu", "epsilon_ms",
        "epsilon_from", "epsilon_idle_us", "kappa_ms", "calibration_s", "costs_for_bound",
        "costs_in_measured_run", "paam_stages_in_run_us", "server_threads", "paamd_startup",
        "server_cpus", "ros_cost_per_callback_ms", "bound_ms", "bound_with_ros_cost_ms",
        "os_priorities", "executor_wait", "t0_ns", "device_bucket_demand", "fair_buckets",
        "paamd_workers", "results", "host", "latency_by_host_steal", "gc", "page_faults"]
    assert data["params"]["experiment"] == "case-study-1" and data["params"]["backend"] == "cpu"
    assert list(data["costs_for_bound"]) == ["chain", "epsilon_ms", "body_ms", "executor_ms",
                                             "delta_ms", "requests"]
    assert data["results"]["chain1"]["PAAM"]["max"] == 7.0
    assert data["page_faults"]["PAAM"] == {"minor_major": {"ex1": [1, 0], "be1": [2, 0]}}
    assert data["host"]["ROS 2"]["samples"] == 3
    for f in ("summary.csv", "latency.csv", "paam_stages.csv", "host_stat.csv",
              "system_scaled.yaml", "summary.txt"):
        assert (tmp_path / f).stat().st_size > 0, f
    stages = (tmp_path / "paam_stages.csv").read_text().splitlines()
    assert stages[0] == "run,chain,dispatch_us,launch_us,completion_us,client_wake_us"
    assert [line.split(",")[0] for line in stages[1:]] == ["calibration"] * 2 + ["measured"] * 2
    assert plots.draw(o, tmp_path)[-1] == "fig10b_host_steal.png"
    assert (tmp_path / "fig9_max_latency.png").stat().st_size > 0
