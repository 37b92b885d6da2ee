"""``paam eval case-study-1``: the end-to-end run in ROS 2 processes (at CI scale, lower bounds
only), its command line and Config, its bucket placement, the split of its instances by the
host's steal, and the report of synthetic runs."""
import json
import time

import pytest

from eval_helpers import _paam


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

