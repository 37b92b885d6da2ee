"""Runs case study 1's methods: one process per executor for each method, started together,
their records read back into a :class:`MethodRun`; for PAAM a paamd with the case study's
options, its overhead on the idle server, and a calibration run before the measured one."""
from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing as mp
import os
import tempfile
import threading
import time

import numpy as np

from paam.analysis.model import SystemSpec
from paam_experiments.case_study1.config import Config, ExecutorPlan
from paam_experiments.case_study1.executor import executor_main
from paam_experiments.case_study1.system import chains_by_executor
from paam_experiments.common import server as paamd
from paam_experiments.common.cpus import pin_this_thread
from paam_experiments.common.host import HostSeries, HostStat
from paam_experiments.common.methods import KEY_OF_METHOD
from paam_experiments.common.procs import environ, join_child, keep_awake
from paam_experiments.common.stats import summarize


@dataclasses.dataclass
class Placement:
    """Where things run: the executors' cores (``mapping``, the system's executors mapped onto
    ``cpus``), the device core of the CPU backend (``dev``; -2 on cuda) and paamd's cores."""

    cpus: list[int]
    dev: int
    mapping: dict[str, int]
    server_cpus: list[int]


@dataclasses.dataclass
class MethodRun:
    """What one method's run recorded. Per chain: each instance's latency (ms), its time outside
    the callbacks' bodies (``gap_ms``), its end (CLOCK_MONOTONIC ns), the timer expiries it
    skipped, its executor. Per executor: its OS priority note, the collector's pauses, its page
    faults in the measured window. PAAM's request stages (µs: dispatch, launch, completion,
    client wake) with each request's chain; the run's start (``t0_ns``); paamd's page faults;
    and what the host took from the CPUs meanwhile (``host``, where sampled)."""

    t0_ns: int = 0
    latency_ms: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    gap_ms: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    end_ns: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    missed: dict[str, int] = dataclasses.field(default_factory=dict)
    executor_of: dict[str, str] = dataclasses.field(default_factory=dict)
    rt: dict[str, str] = dataclasses.field(default_factory=dict)
    gc_ns: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    faults: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    body_excess_ms: list[float] = dataclasses.field(default_factory=list)
    stages_us: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 4)))
    stage_chain: list[str] = dataclasses.field(default_factory=list)
    server_faults: list[int] | None = None
    host: HostSeries | None = None


@dataclasses.dataclass
class Runs:
    """Every method's measured run (by method name), and around PAAM's: the calibration run,
    the server overhead on the idle server (µs, a summary), what paamd said at start and how its
    threads were scheduled."""

    results: dict[str, MethodRun]
    calibration_run: MethodRun | None = None
    idle_overhead_us: dict | None = None
    server_note: str = ""
    paamd_said: list[str] = dataclasses.field(default_factory=list)
    worker_sched: dict[str, str] = dataclasses.field(default_factory=dict)


def _process_faults(pid: int) -> "list[int] | None":
    """A process's page faults so far, [minor, major], from /proc/PID/stat; None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the command name
    except OSError:
        return None
    return [int(fields[7]), int(fields[9])]  # minflt, majflt (fields 10 and 12 of stat)


def _read_records(run: MethodRun, path: str, executor: str) -> None:
    """One executor process's records (its .npz) into ``run``."""
    with np.load(path) as z:
        for i, chain in enumerate(z["names"]):
            lat = z[f"lat_{chain}"]
            run.latency_ms[str(chain)] = (lat[:, 1] - lat[:, 0]) / 1e6
            run.gap_ms[str(chain)] = lat[:, 2] / 1e6
            run.end_ns[str(chain)] = lat[:, 1]
            run.missed[str(chain)] = int(z["missed"][i])
            run.executor_of[str(chain)] = executor
        run.rt[executor] = str(z["rt_note"])
        run.gc_ns[executor] = z["gc_ns"]
        run.faults[executor] = [int(x) for x in z["faults"]]
        run.body_excess_ms.extend(z["body_excess"].tolist())
        st = z["stages_ns"]
        run.stages_us = np.vstack([run.stages_us, st[:, 1:] / 1e3])
        run.stage_chain.extend(str(z["names"][i]) for i in st[:, 0])


def run_method(method: str, spec: SystemSpec, config: Config, tmp: str, socket: str | None,
               dev: int, *, duration: float | None = None, tag: str = "",
               sample_host: bool = True, server_pid: int | None = None) -> MethodRun:
    """Runs ``method`` (its key: ros2, picas, paam) on ``spec``'s executors, one process each,
    for ``duration`` s (default ``config.duration``) after a warm-up; with ``sample_host``,
    samples /proc/stat meanwhile; with ``server_pid`` (paamd), counts its page faults in the
    measured window."""
    ctx = mp.get_context("spawn")
    sync = {"ready": ctx.Queue(), "go": ctx.Event(), "start_at": ctx.Value("d", 0.0)}
    warmup = max(0.5, 2 * max(ch.period for ch in spec.chains) / 1e3)
    procs = []
    duration = config.duration if duration is None else duration
    prefix = f"/paam_eval_cs1_{os.getpid()}_{method}{tag}"
    for name, chains in chains_by_executor(spec).items():
        ex = spec.executors[name]
        plan = ExecutorPlan(
            method=method, executor=name, cpu=ex.cpu,
            os_priority=ex.priority if method != "ros2" else 0, wait=ex.wait,
            best_effort=all(c.best_effort for c in chains), chains=chains, socket=socket,
            backend=config.backend, device_cpu=dev, rt=config.rt,
            direct_keeps_priority=config.direct_keeps_priority, lock_memory=config.lock_memory,
            topic_prefix=prefix, warmup_s=warmup, duration_s=duration, gc=config.gc,
            executor_wait=config.executor_wait)
        path = os.path.join(tmp, f"{method}{tag}-{name}.npz")
        p = ctx.Process(target=executor_main, args=(plan, path, sync))
        # --lock-memory: Python's small objects through malloc, which then keeps what it frees
        # (paam.ros.rt.lock_memory), instead of pymalloc's arenas, which Python unmaps when
        # they empty and maps afresh: a fresh page, a fault
        with environ({"PYTHONMALLOC": "malloc"} if plan.lock_memory and method != "ros2"
                     else {}):
            p.start()
        procs.append((p, path, name))
    for _ in procs:  # every executor set up (nodes, clients, registrations)
        try:
            sync["ready"].get(timeout=120)
        except Exception:  # noqa: BLE001 - queue.Empty
            break
    # what the host took from the CPUs meanwhile (a with block: no sampler left on a failure)
    with (HostStat() if sample_host else contextlib.nullcontext()) as host:
        start_at = time.monotonic() + 0.3
        sync["start_at"].value = start_at
        sync["go"].set()
        run = MethodRun(t0_ns=int(start_at * 1e9))
        deadline = time.monotonic() + (start_at - time.monotonic()) + warmup + duration + 120
        # paamd's page faults in the executors' measured window, read beside the joins (so
        # that an executor that fails is still reported at once)
        server_faults: list = []
        sampler = None
        if server_pid is not None:
            def sample() -> None:
                for at in (start_at + warmup, start_at + warmup + duration):
                    time.sleep(max(0.0, at - time.monotonic()))
                    server_faults.append(_process_faults(server_pid))
            sampler = threading.Thread(target=sample, name="paamd-faults", daemon=True)
            sampler.start()
        for p, path, name in procs:
            join_child(p, path, f"{method}: executor {name}", deadline - time.monotonic())
            _read_records(run, path, name)
        if sampler is not None:
            sampler.join(max(0.0, start_at + warmup + duration - time.monotonic()) + 5)
            if len(server_faults) == 2 and None not in server_faults:
                before, after = server_faults
                run.server_faults = [a - b for a, b in zip(after, before)]
    if host is not None:
        run.host = host.result()
    return run


def calibrate(socket: str, cpus: list[int], n: int = 2000) -> dict:
    """Server overhead (round trip less kernel, µs) of ``n`` requests on the idle server."""
    import paam
    pin_this_thread(cpus)
    over = []
    with paam.Client(priority=100, kernels=["spin"], wait="suspend", socket=socket,
                     name="eval-calibration") as c:
        for i in range(n + 50):
            c.request("spin", duration_ms=0.0)
            t = c.timestamps("spin")
            if i >= 50:
                over.append(((t["woken"] - t["submitted"]) - (t["device_end"] - t["device_start"]))
                            / 1e3)
    pin_this_thread(range(os.cpu_count() or 1))
    return summarize(over)


def paamd_args(config: Config, spec: SystemSpec, placement: Placement, buckets: int,
               fair: dict[str, int] | None) -> list[str]:
    """paamd's command line for the PAAM run: --rt (SCHED_FIFO bucket workers on the CPU
    backend, a dispatcher above them; not under ``rt`` nice), the server options this machine
    has cores for, the best-effort buckets kept off SCHED_FIFO, --lock-memory, and the
    dispatcher's priority."""
    opts = config.server
    # polling threads: the dispatcher and the workers (one per bucket, and on cuda one per
    # best-effort lane of the lowest)
    args = (([] if config.rt == "nice" else ["--rt"])
            + paamd.server_poll_args(opts, placement.server_cpus,
                                     paamd.paamd_workers(config.backend, buckets) + 1)
            + paamd.cuda_wait_args(opts)
            + paamd.spin_bucket_args(opts, buckets, placement.server_cpus)
            + paamd.queue_args(opts)
            + (["--fair-buckets", str(next(iter(fair.values())))] if fair else [])
            + (["--lock-memory"] if config.lock_memory else []))
    args += (["--dispatcher-priority", "0"] if config.server_as_shipped
             else paamd.dispatcher_args(opts, max(e.priority for e in spec.executors.values())))
    return args


def run_methods(config: Config, spec: SystemSpec, placement: Placement, methods: list[str],
                fair: dict[str, int] | None) -> Runs:
    """Every method of ``methods`` one after the other; PAAM's against a paamd of its own,
    with the idle-server overhead and (``config.calibration`` > 0) a calibration run first."""
    from paam.testing import start_server
    buckets = next(iter(spec.accelerators.values())).buckets
    dev = placement.dev
    runs = Runs(results={})
    awake = (keep_awake(paamd.awake_cpus(placement.cpus, placement.server_cpus, config.server))
             if config.keep_awake else contextlib.nullcontext())
    with tempfile.TemporaryDirectory(prefix="paam-eval-") as tmp, awake:
        for i, m in enumerate(methods, 1):
            print(f"[{i}/{len(methods)}] {m} ...", flush=True)
            key = KEY_OF_METHOD[m]
            if m != "PAAM":
                runs.results[m] = run_method(key, spec, config, tmp, None, dev)
                continue
            with start_server(buckets=buckets, backend=config.backend,
                              device_cpu=dev if config.backend == "cpu" else None,
                              extra_args=paamd_args(config, spec, placement, buckets, fair),
                              cpus=placement.server_cpus) as srv:
                if config.rt == "nice" and not config.server_as_shipped:
                    runs.server_note = paamd.raise_server_threads(srv.pid, dev)
                runs.worker_sched = paamd.paamd_worker_sched(srv.pid)
                runs.idle_overhead_us = calibrate(srv.socket_path, placement.cpus)
                if config.calibration > 0:
                    print(f"      calibration run ({config.calibration:g} s) ...", flush=True)
                    runs.calibration_run = run_method(
                        key, spec, config, tmp, srv.socket_path, dev,
                        duration=config.calibration, tag="calibration", sample_host=False)
                runs.results[m] = run_method(key, spec, config, tmp, srv.socket_path, dev,
                                             server_pid=srv.pid)
                runs.paamd_said = paamd.paamd_startup(srv)
    return runs
