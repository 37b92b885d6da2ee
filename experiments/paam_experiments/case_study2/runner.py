"""The processes of a case study 2 run: per setup x method the executor processes (spawned,
released together), for PAAM the two paamds (the GPU's, one bucket per chain priority, and the
TPU stand-in's, one bucket: one non-preemptive context), and their records combined into one
:class:`.records.RunResult` each.

4ST runs four executor processes, each pinned to its core; MT one process over the four
cores. Every process waits for the parent's go and starts its timers at the common start time.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import time

import numpy as np

from paam_experiments import common
from paam_experiments.case_study2 import graph
from paam_experiments.case_study2.config import Config, ProcessConfig
from paam_experiments.case_study2.executor import executor_main
from paam_experiments.case_study2.placement import Placement, helper_cpus
from paam_experiments.case_study2.records import ProcessRecord, RunResult, combine


@dataclasses.dataclass
class Runs:
    """Every setup x method of a run: its results by (setup, method name), what paamd's threads
    were given (``--rt nice``) and what each paamd said at start (the last PAAM run's)."""
    results: dict[tuple[str, str], RunResult] = dataclasses.field(default_factory=dict)
    server_notes: list[str] = dataclasses.field(default_factory=list)
    paamd_startup: dict[str, list[str]] = dataclasses.field(default_factory=dict)


def process_configs(setup: str, method: str, cfg: Config, sockets: dict[str, str],
                    placement: Placement) -> list[ProcessConfig]:
    """The executor processes of ``setup`` x ``method`` (a method key: ros2, picas, paam):
    one per executor in 4ST, one of four in MT; ``sockets``: PAAM's paamds' by accelerator."""
    groups = ([{e.name: e.nodes} for e in graph.EXECUTORS] if setup == "4ST"
              else [{e.name: e.nodes for e in graph.EXECUTORS}])
    base = ProcessConfig(
        method=method, setup=setup, scale=cfg.scale, gpu_ms=cfg.gpu_ms_eff,
        tpu_ms=cfg.tpu_ms_eff, backend=cfg.backend, device_cpu=placement.device_cpu,
        tpu_cpu=placement.tpu_cpu, gpu_socket=sockets.get("gpu"),
        tpu_socket=sockets.get("tpu"), rt=cfg.rt,
        direct_keeps_priority=cfg.direct_keeps_priority,
        topic_prefix=f"/paam_eval_cs2_{os.getpid()}_{setup}_{method}",
        wait=cfg.wait, hot_wait=cfg.hot_wait or cfg.wait,
        request_priority=cfg.request_priority, segments=cfg.segments,
        cpu_probe=cfg.cpu_probe, warmup_s=cfg.warmup, duration_s=cfg.duration, gc=cfg.gc,
        executor_wait=cfg.executor_wait, helper_cpus=helper_cpus(placement, cfg),
        shared_mt=setup == "MT" and method != "ros2" and cfg.mt_executor == "shared",
        mt_hot_threads=cfg.mt_hot_threads, switch_interval_ms=cfg.switch_interval_ms,
        intersection_groups=cfg.intersection_groups, e0_executor=cfg.e0_executor)
    return [dataclasses.replace(base, executors=exs, name="+".join(exs),
                                cpus={k: placement.executor_cpus[k] for k in exs})
            for exs in groups]


def run_one(setup: str, method: str, cfg: Config, tmp: str, sockets: dict[str, str],
            placement: Placement, progress: str) -> RunResult:
    """One setup x method: its executor processes released together, waited for, their records
    combined. ``progress`` labels the progress lines."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    sync = {"ready": ctx.Queue(), "go": ctx.Event(), "start_at": ctx.Value("d", 0.0)}
    procs = []
    for i, pcfg in enumerate(process_configs(setup, method, cfg, sockets, placement)):
        path = os.path.join(tmp, f"{setup}-{method}-{i}.npz")
        p = ctx.Process(target=executor_main, args=(pcfg, path, sync))
        p.start()
        procs.append((p, path, pcfg.name))
    for _ in procs:
        try:
            sync["ready"].get(timeout=180)
        except Exception:  # noqa: BLE001 - queue.Empty
            break
    with common.HostStat() as host:  # what the host took from the CPUs meanwhile
        start_at = time.monotonic() + 0.5
        sync["start_at"].value = start_at
        sync["go"].set()
        total = cfg.warmup + cfg.duration
        finish = start_at + total
        next_note = time.monotonic() + 30
        while any(p.is_alive() for p, _, _ in procs) and time.monotonic() < finish + 120:
            time.sleep(0.5)
            if time.monotonic() >= next_note and time.monotonic() < finish:
                done = time.monotonic() - start_at
                print(f"    {progress}: {done:.0f}/{total:.0f} s", flush=True)
                next_note += 30
        records = []
        for p, path, name in procs:
            common.join_child(p, path, f"{setup}/{method}: process {name}",
                              finish + 120 - time.monotonic())
            records.append((name, ProcessRecord.load(path)))
    return combine(records, int(start_at * 1e9), common.host_series(host))


def _paam_run(setup: str, cfg: Config, tmp: str, placement: Placement, label: str,
              runs: Runs) -> RunResult:
    """A PAAM run beside its two paamds."""
    from paam.testing import start_server
    pl, n_buckets = placement, graph.GPU_BUCKETS
    # polling threads: both servers' dispatchers, the GPU server's workers (the TPU stand-in's
    # worker polls on its own core). --server-pin: the GPU server's threads on all of paamd's
    # cores but the last, the TPU server's dispatcher there
    rt = (([] if cfg.rt == "nice" else ["--rt"])
          + common.dispatcher_args(cfg, max(e.priority for e in graph.EXECUTORS)))
    cpus = common.server_cores(cfg, pl.server_cpus)
    threads = common.paamd_workers(cfg.backend, n_buckets) + cfg.hot_lanes + 1
    gpu_args = (rt + common.server_poll_args(cfg, cpus, threads, pin_cpus=cpus[:-1])
                + common.cuda_wait_args(cfg)
                + common.spin_bucket_args(cfg, n_buckets, cpus)
                + (["--lanes", str(cfg.hot_lanes)] if cfg.hot_lanes > 1 else []))
    tpu_args = (rt + common.server_poll_args(cfg, cpus, threads, pin_cpus=cpus[-1:])
                + common.spin_bucket_args(cfg, 1, cpus))
    with start_server(buckets=n_buckets, backend=cfg.backend,
                      device_cpu=pl.device_cpu if cfg.backend == "cpu" else None,
                      extra_args=gpu_args, cpus=cpus) as gpu_srv, \
            start_server(buckets=1, backend="cpu", device_cpu=pl.tpu_cpu,
                         extra_args=tpu_args, cpus=cpus) as tpu_srv:
        if cfg.rt == "nice":
            runs.server_notes = [common.raise_server_threads(gpu_srv.pid, pl.device_cpu),
                                 common.raise_server_threads(tpu_srv.pid, pl.tpu_cpu)]
        res = run_one(setup, "paam", cfg, tmp, {"gpu": gpu_srv.socket_path,
                                                "tpu": tpu_srv.socket_path}, pl, label)
        runs.paamd_startup = {"gpu": common.paamd_startup(gpu_srv),
                              "tpu": common.paamd_startup(tpu_srv)}
    return res


def run_all(cfg: Config, placement: Placement) -> Runs:
    """Every setup x method of ``cfg``, one after the other, with progress lines."""
    runs = Runs()
    todo = [(s, m) for s in cfg.setup_names() for m in cfg.method_names()]
    with tempfile.TemporaryDirectory(prefix="paam-eval-cs2-") as tmp, \
            (common.keep_awake(common.awake_cpus(placement.host_cpus, placement.server_cpus,
                                                 cfg))
             if cfg.keep_awake else contextlib.nullcontext()):
        for i, (setup, m) in enumerate(todo, 1):
            label = f"[{i}/{len(todo)}] {setup} / {m}"
            print(f"{label} ...", flush=True)
            t0 = time.monotonic()
            if m == "PAAM":
                res = _paam_run(setup, cfg, tmp, placement, label, runs)
            else:
                res = run_one(setup, common.KEY_OF_METHOD[m], cfg, tmp, {}, placement, label)
            runs.results[(setup, m)] = res
            lat = res.latency_ms
            print(f"    done in {time.monotonic() - t0:.0f} s: {lat.size} hot-path instances, "
                  f"max {np.max(lat) if lat.size else float('nan'):.1f} ms, "
                  f"{int(res.drops.sum())} drops", flush=True)
    return runs
