"""``paam eval case-study-1``: the PAAM paper's case study 1 (Sec. V-A, Figs. 9 and 10) as real
ROS 2 processes.

The chain set of ``case_study_1.yaml`` (eight chains, six critical and two best-effort, every
callback a CPU part then a 10 ms accelerator segment) runs as one rclpy process per executor.
A chain's first callback is a timer of the chain's period; each later callback subscribes to its
predecessor's topic. Each callback burns its CPU WCET (thread CPU time) and then runs its
segment, the ``spin`` kernel. The chain latency of an instance runs from its timer's expiry to
the end of its last callback. Three methods:

* ``ROS 2``: rclpy's SingleThreadedExecutor (SCHED_OTHER; stock ROS 2 has no priority knob),
  direct invocation (every process runs its kernels itself: on a GPU one context per process,
  time-sliced by the driver);
* ``PiCAS``: ``paam.ros.PicasExecutor`` with chain-inherited callback priorities and the
  executors' OS priorities (SCHED_FIFO when permitted, else a nice ladder), direct invocation;
* ``PAAM``: the same executors, segments through paamd (chain priorities in 6 buckets).

Beside them the analysis bound (``paam analyze`` on the scaled system this run writes, with the
server overhead epsilon measured in the PAAM run and the preemption cost ``--preemption-ms``),
twice: with the paper's WCETs, and with each callback's WCET raised by the rclpy/Python cost
this machine measured (the analysis assumes callbacks cost their declared WCET, nothing more).

On the CPU backend one core plays the device. Two things follow. A direct kernel runs on the
calling thread, so it would inherit the executor's SCHED_FIFO priority and get a priority-driven
device that no GPU offers: the experiment drops the thread to SCHED_OTHER for the kernel, as a
GPU time-slices contexts whatever their CPU priority (``--direct-keeps-priority`` turns that
off). And the case study's executor CPUs (2-7) are mapped onto the cores left beside the device
core, modulo their number (all onto core 0 on a 2-core machine).

``--scale`` multiplies every time (periods, WCETs, segments): 1 is the paper's system; the
2-core development machine runs it at 0.25 (10 ms segments become 2.5 ms).
Writes ``latency.csv`` (every chain instance: its latency and end, s from the run's start),
``paam_stages.csv`` (paamd's stages of every request of the calibration and the measured PAAM
run), ``host_stat.csv`` (/proc/stat each second of each measured run: what the host, a
hypervisor, took from each CPU), ``summary.csv``, ``summary.json``, ``summary.txt``,
``system_scaled.yaml`` (what the bound analyses: ``paam analyze`` it), ``fig9_max_latency.png``,
``fig10_distributions.png`` and ``fig10b_host_steal.png`` (the critical chain's latency over
time beside the steal, with its bound).
"""
from __future__ import annotations

import argparse
import contextlib
import math
import multiprocessing as mp
import os
import random
import resource
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from paam.analysis.bounds import best_effort_buckets, bucket_demand
from paam import examples
from paam.analysis.model import SystemSpec
from paam_experiments import common
from paam_experiments.overhead import LOCAL_STAGES

DEFAULT_SYSTEM = examples.path("case_study_1")


def _fair_buckets_arg(text: str) -> str | int:
    if text == "auto":
        return text
    if text.isdigit():
        return int(text)
    raise argparse.ArgumentTypeError(f"expected 'auto' or a number of buckets, got {text!r}")


def fair_buckets(spec: SystemSpec, args: argparse.Namespace) -> dict[str, int] | None:
    """How many of the lowest buckets paamd's CPU backend keeps on its nice ladder (its
    --fair-buckets), per accelerator; None where that is not chosen (the cuda backend, or --rt
    nice, where no bucket gets SCHED_FIFO). 'auto': the buckets that hold only best-effort
    chains, at least the lowest (paamd's own default with several buckets)."""
    if args.backend != "cpu" or args.rt == "nice":
        return None
    out = {}
    best_effort = best_effort_buckets(spec) if args.fair_buckets == "auto" else {}
    for name, acc in spec.accelerators.items():
        if args.fair_buckets == "auto":
            out[name] = max(best_effort[name], 1 if acc.buckets > 1 else 0)
        elif args.fair_buckets > acc.buckets:
            raise SystemExit(f"--fair-buckets {args.fair_buckets}: {name} has {acc.buckets} "
                             "bucket(s)")
        else:
            out[name] = args.fair_buckets
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--system", default=str(DEFAULT_SYSTEM),
                   help="chain set (default: the paper's case study 1, shipped with paam)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="factor on every time of the system (default 1: the paper's system)")
    p.add_argument("--duration", type=float, default=600.0,
                   help="seconds per method (default 600, the paper's 10 minutes)")
    p.add_argument("--methods", default="ros2,picas,paam", help="subset of ros2, picas, paam")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--rt", default="auto", choices=["auto", "fifo", "nice"],
                   help="executor OS priorities for PiCAS and PAAM: SCHED_FIFO when permitted "
                        "else a nice ladder (auto), SCHED_FIFO only, or the nice ladder only "
                        "(what a machine that denies SCHED_FIFO gets; paamd then runs without "
                        "--rt, its workers on its nice ladder)")
    p.add_argument("--fair-buckets", default="auto", type=_fair_buckets_arg,
                   help="cpu backend: how many of the lowest buckets paamd keeps off SCHED_FIFO "
                        "(its --fair-buckets): auto (default), those that hold only best-effort "
                        "chains, at least the lowest, so that best-effort load cannot use up "
                        "the kernel's real-time budget on the device core; or a number")
    p.add_argument("--lock-memory", action="store_true",
                   help="PiCAS's and PAAM's executors lock their memory after their setup "
                        "(paam.ros.rt.lock_memory: mlockall where permitted without limit, and "
                        "malloc keeps what it frees), and so does paamd (its --lock-memory), so "
                        "that no page fault lands in a callback or on a request's path")
    p.add_argument("--preemption-ms", type=float, default=None,
                   help="kappa for the bound (default: 0.02 on the cpu backend, 0.13 on cuda, "
                        "docs/gpu.md)")
    p.add_argument("--overhead-ms", type=float, default=None,
                   help="epsilon for the bound (default: the largest server overhead of a "
                        "request under load, measured in the calibration run)")
    p.add_argument("--calibration", type=float, default=30.0,
                   help="seconds of a first PAAM run whose measurements feed the bound: epsilon "
                        "under load and the rclpy cost (default 30; 0: take them from the "
                        "measured PAAM run itself, which makes the bound circular)")
    p.add_argument("--chains", default="",
                   help="comma-separated subset of the chains to run (default: all)")
    p.add_argument("--server-as-shipped", action="store_true",
                   help="run paamd's dispatcher at normal priority (paamd --dispatcher-priority "
                        "0), to show the priority inversion that --rt's raised dispatcher removes")
    p.add_argument("--direct-keeps-priority", action="store_true",
                   help="cpu backend: let direct kernels run at the executor's OS priority")
    p.add_argument("--wait", default=None, choices=["suspend", "hybrid", "spin"],
                   help="how PAAM's executors wait for paamd, in place of the system's `wait` "
                        "(the bound follows: a spinning executor interferes with the lower "
                        "ones on its core for its whole segments); only an executor that is the "
                        "most urgent on its core spins, the others suspend")
    common.add_server_arguments(p)
    common.add_keep_awake_argument(p)
    common.add_gc_argument(p)
    common.add_executor_wait_argument(p)
    p.add_argument("--quick", action="store_true",
                   help="CI smoke scale: --scale 0.2, 2.5 s per method, chains 1-3 and be1")
    p.add_argument("--out", default="results/eval/case-study-1")


# -- the system ---------------------------------------------------------------------------------


def scaled_system(path: str, scale: float, cpus: list[int]):
    """The system of ``path`` with every time times ``scale`` and executor CPUs mapped onto
    ``cpus``; returns (spec, {executor: mapped cpu})."""
    from paam.analysis.model import load_system
    spec = load_system(path).copy()
    mapping = {}
    for ex in spec.executors.values():
        mapping[ex.name] = common.map_cpu(ex.cpu, cpus)
        ex.cpu = mapping[ex.name]
    for ch in spec.chains:
        ch.period *= scale
        if ch.deadline is not None:
            ch.deadline *= scale
        for cb in ch.callbacks:
            cb.wcet *= scale
            for s in cb.segments:
                s.wcet *= scale
    return spec, mapping


def set_wait(spec, wait: str) -> None:
    """Every executor waits ``wait``, except one below another on its core, which suspends: the
    most urgent executor's wake-up is the one worth saving, and each spinning executor adds its
    whole segments to the interference on the ones below it."""
    for ex in spec.executors.values():
        top = all(o.priority <= ex.priority for o in spec.executors.values() if o.cpu == ex.cpu)
        ex.wait = wait if top else "suspend"


def bounds(spec, epsilon_ms: float, kappa_ms: float, extra_cpu_ms: float = 0.0) -> dict:
    from paam.analysis.bounds import analyze
    s = spec.copy()
    for acc in s.accelerators.values():
        acc.overhead, acc.preemption = epsilon_ms, kappa_ms
    for ch in s.chains:
        for cb in ch.callbacks:
            cb.wcet += extra_cpu_ms
    result = analyze(s, stop_at_deadline=False)
    return {c.name: c.wcrt for c in result.chains}, s


# -- one executor process -----------------------------------------------------------------------


def _burn(ns: int) -> None:
    end = time.thread_time_ns() + ns
    while time.thread_time_ns() < end:
        pass


def executor_main(cfg: dict, path: str, sync: dict) -> None:
    import warnings
    warnings.filterwarnings("ignore", message="coroutine .* was never awaited")
    try:
        _executor(cfg, path, sync)
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        sync["ready"].put("failed")
        common.child_failed(path, exc)


def _executor(cfg: dict, path: str, sync: dict) -> None:
    # Every thread of the process (DDS's included) on the executor's core and, for PiCAS and
    # PAAM, at the executor's OS priority, before they exist: threads inherit both from this
    # one, as from `chrt`/`nice` on a C++ executor process. (At nice 0 on a core shared with a
    # best-effort executor, DDS's receive thread would wait for the fair scheduler's slice
    # before it hands the next callback its message.) All but DDS's sender thread, which
    # common.dds_threads_rt leaves at SCHED_OTHER (its docstring says why).
    common.pin_this_thread([cfg["cpu"]])
    if cfg["method"] != "ros2":
        # (the PicasExecutor applies the same to this thread again below, and reports it)
        common.apply_rt(cfg["os_priority"], cfg["cpu"], mode=cfg["rt"],
                        best_effort=cfg["best_effort"], log=lambda _line: None)
    import rclpy
    from rclpy.clock import Clock, ClockType
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile
    from std_msgs.msg import Int64

    import paam
    from paam.ros import (CallbackSpec, Chain, create_lean_node, lean_publisher_options,
                          lean_subscription_options)

    method = cfg["method"]
    spins = method == "paam" and cfg["wait"] != "suspend"  # the executor spins on paamd
    ctx = Context()
    with common.dds_threads_rt():  # DDS's threads start with the context and the first node
        rclpy.init(context=ctx)
        node = create_lean_node(f"cs1_{cfg['executor']}_{os.getpid()}", context=ctx)
    steady = Clock(clock_type=ClockType.STEADY_TIME)
    qos = QoSProfile(depth=10)
    kernel_drop = (method != "paam" and cfg["backend"] == "cpu"
                   and not cfg["direct_keeps_priority"])

    chains = []
    for ch in cfg["chains"]:
        chains.append(Chain(
            ch["name"], priority=ch["priority"], period_ms=ch["period"],
            callbacks=[CallbackSpec(cb["name"], cpu_wcet_ms=cb["wcet"],
                                    segments_ms=cb["segments"], kernels=["spin"])
                       for cb in ch["callbacks"]],
            executor=cfg["executor"], executor_cpu=cfg["cpu"],
            executor_priority=cfg["os_priority"], executor_wait=cfg["wait"],
            best_effort=ch["best_effort"]))

    latencies: dict[str, list[tuple[int, int, int]]] = {c.name: [] for c in chains}
    body_wall: dict[tuple[str, int], int] = {}  # (chain, release) -> callback wall time so far
    body_excess: list[float] = []   # ms of callback CPU time beyond the burn
    # PAAM: chain index (into cfg["chains"]), dispatch, launch, completion, wake
    stages_ns: list[tuple[int, int, int, int, int]] = []
    chain_index = {ch["name"]: i for i, ch in enumerate(cfg["chains"])}
    calls = {c.name: 0 for c in chains}
    first_expiry: dict[str, int] = {}
    record_from = [0]
    clients = []
    timers = {}

    def make_client(chain: Chain, cb_name: str):
        if method == "paam":
            c = chain.client(cb_name, timing=False, socket=cfg["socket"])
        else:
            c = paam.Client(priority=chain.priority, kernels=["spin"], wait=cfg["wait"],
                            direct=True, direct_backend=cfg["backend"],
                            device_cpu=cfg["device_cpu"])
        clients.append(c)
        return c

    def run_segment(client, ms: float, chain_name: str) -> None:
        if kernel_drop:
            saved = os.sched_getscheduler(0), os.sched_getparam(0), os.getpriority(
                os.PRIO_PROCESS, 0)
            try:
                if saved[0] != os.SCHED_OTHER:
                    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
                if saved[2] != 0:
                    os.setpriority(os.PRIO_PROCESS, 0, 0)
            except OSError:
                pass
            client.request("spin", duration_ms=ms)
            try:
                if saved[0] != os.SCHED_OTHER:
                    os.sched_setscheduler(0, saved[0], saved[1])
                if saved[2] != 0:
                    os.setpriority(os.PRIO_PROCESS, 0, saved[2])
            except OSError:
                pass
        else:
            client.request("spin", duration_ms=ms)
        if method == "paam" and time.monotonic_ns() >= record_from[0]:
            t = client.timestamps("spin")
            stages_ns.append((chain_index[chain_name],
                              *(t[end] - t[start] for start, end in _STAGE_STAMPS)))

    for chain in chains:
        n = len(chain.callbacks)
        pubs = [node.create_publisher(Int64, f"{cfg['topic_prefix']}/{chain.name}/cb{i}", qos,
                                      **lean_publisher_options())
                for i in range(1, n)]
        for i, spec in enumerate(chain.callbacks):
            client = make_client(chain, spec.name)
            burn_ns = int(spec.cpu_wcet_ms * 1e6)
            segs = spec.segments_ms
            last = i == n - 1
            pub = pubs[i] if not last else None

            def body(release: int, client=client, burn_ns=burn_ns, segs=segs, pub=pub,
                     chain_name=chain.name) -> None:
                c0 = time.thread_time_ns()
                w0 = time.monotonic_ns()
                _burn(burn_ns)
                c_seg = time.thread_time_ns()
                for s in segs:
                    run_segment(client, s, chain_name)
                # a spinning PAAM wait burns CPU time that is the segments', not rclpy's
                spun = time.thread_time_ns() - c_seg if spins else 0
                key = (chain_name, release)
                if pub is not None:
                    body_wall[key] = body_wall.get(key, 0) + time.monotonic_ns() - w0
                    pub.publish(Int64(data=release))
                else:
                    end = time.monotonic_ns()
                    wall = body_wall.pop(key, 0) + end - w0
                    if release >= record_from[0]:
                        # gap: latency outside the callbacks' bodies (executor, messages,
                        # waiting for the CPU)
                        latencies[chain_name].append((release, end, end - release - wall))
                if release >= record_from[0]:
                    body_excess.append((time.thread_time_ns() - c0 - burn_ns - spun) / 1e6)

            if i == 0:
                period_ns = int(chain.period_ms * 1e6)

                def on_timer(body=body, name=chain.name, period_ns=period_ns) -> None:
                    until = timers[name].time_until_next_call()
                    release = time.monotonic_ns() - (period_ns - (until or 0))
                    if release >= record_from[0]:
                        first_expiry.setdefault(name, release)
                        calls[name] += 1
                    body(release)

                timers[chain.name] = node.create_timer(chain.period_ms / 1e3, on_timer,
                                                       clock=steady, autostart=False)
                chain.bind(spec.name, timers[chain.name])
            else:
                def on_msg(msg, body=body) -> None:
                    body(int(msg.data))
                sub = node.create_subscription(Int64, f"{cfg['topic_prefix']}/{chain.name}/cb{i}",
                                               on_msg, qos, **lean_subscription_options())
                chain.bind(spec.name, sub)

    rt_note = "SCHED_OTHER nice 0"
    if method == "ros2":
        ex = SingleThreadedExecutor(context=ctx)
    else:
        from paam.ros import PicasExecutor
        ex = PicasExecutor(context=ctx, lean_wait=cfg["executor_wait"] == "own")
        for chain in chains:
            chain.configure_executor(ex)  # callback priorities (+ the RT request)
        # auto: SCHED_FIFO, else the nice ladder or SCHED_IDLE (paam.ros.rt); fifo: SCHED_FIFO
        # or nothing; nice: the ladder (SCHED_IDLE for a best-effort executor) only
        rt_note = str(ex.apply_rt(mode=cfg["rt"]))
    ex.add_node(node)
    if cfg["lock_memory"] and method != "ros2":  # after the setup: what is mapped now stays
        rt_note += "; " + common.lock_memory()

    # Common start: every executor's timers begin together (synchronous release). Python's
    # collector as --gc says from here on, its pauses recorded.
    with common.GcPauses(cfg["gc"]) as gc_pauses:
        start = common.synchronous_start(sync, cfg["executor"], timers.values(), 120)
        record_from[0] = start + int(cfg["warmup_s"] * 1e9)
        end = start + int((cfg["warmup_s"] + cfg["duration_s"]) * 1e9)
        faults_from = None
        while time.monotonic_ns() < end:
            if faults_from is None and time.monotonic_ns() >= record_from[0]:
                faults_from = resource.getrusage(resource.RUSAGE_SELF)
            ex.spin_once(timeout_sec=0.05)
        stop = time.monotonic_ns()
        # the process's page faults in the measured window (minor, major)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        faults = ([ru.ru_minflt - faults_from.ru_minflt, ru.ru_majflt - faults_from.ru_majflt]
                  if faults_from is not None else [0, 0])
    for t in timers.values():
        t.cancel()
    missed = {}
    for chain in chains:
        fe = first_expiry.get(chain.name)
        per = int(chain.period_ms * 1e6)
        expected = 0 if fe is None else (stop - fe) // per + 1
        missed[chain.name] = max(0, int(expected - calls[chain.name]))
    arrays = {f"lat_{k}": np.asarray(v, dtype=np.int64).reshape(-1, 3)
              for k, v in latencies.items()}
    np.savez(path, **arrays, body_excess=np.asarray(body_excess),
             stages_ns=np.asarray(stages_ns, dtype=np.int64).reshape(-1, 5),
             missed=np.asarray([missed[c.name] for c in chains]),
             names=np.asarray([c.name for c in chains]), rt_note=np.asarray(rt_note),
             gc_ns=gc_pauses.array(), faults=np.asarray(faults))
    for c in clients:
        c.close()
    ex.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=ctx)


# -- one method ---------------------------------------------------------------------------------


def run_method(method: str, spec, args, tmp: str, socket: str | None, dev: int, *,
               duration: float | None = None, tag: str = "", sample_host: bool = True,
               server_pid: int | None = None) -> dict:
    """Runs ``method`` on ``spec``'s executors, one process each; with ``sample_host``, samples
    /proc/stat meanwhile (:func:`common.host_series` keys in the result); with ``server_pid``
    (paamd), counts its page faults in the measured window (``server_faults``)."""
    ctx = mp.get_context("spawn")
    by_ex: dict[str, list[dict]] = {}
    for ch in spec.chains:
        ex_names = {cb.executor for cb in ch.callbacks}
        if len(ex_names) != 1:
            raise SystemExit(f"chain {ch.name}: callbacks on several executors are not supported "
                             "by this experiment")
        by_ex.setdefault(ex_names.pop(), []).append({
            "name": ch.name, "priority": ch.priority, "period": ch.period,
            "best_effort": ch.best_effort,
            "callbacks": [{"name": cb.name, "wcet": cb.wcet,
                           "segments": [s.wcet for s in cb.segments]} for cb in ch.callbacks]})
    sync = {"ready": ctx.Queue(), "go": ctx.Event(), "start_at": ctx.Value("d", 0.0)}
    warmup = max(0.5, 2 * max(ch.period for ch in spec.chains) / 1e3)
    procs = []
    duration = args.duration if duration is None else duration
    prefix = f"/paam_eval_cs1_{os.getpid()}_{method}{tag}"
    for name, chains in by_ex.items():
        ex = spec.executors[name]
        cfg = {"method": method, "executor": name, "cpu": ex.cpu,
               "os_priority": ex.priority if method != "ros2" else 0, "wait": ex.wait,
               "best_effort": all(c["best_effort"] for c in chains),
               "chains": chains, "socket": socket, "backend": args.backend, "device_cpu": dev,
               "rt": args.rt, "direct_keeps_priority": args.direct_keeps_priority,
               "lock_memory": args.lock_memory,
               "topic_prefix": prefix, "warmup_s": warmup,
               "duration_s": duration, "gc": args.gc, "executor_wait": args.executor_wait}
        path = os.path.join(tmp, f"{method}{tag}-{name}.npz")
        p = ctx.Process(target=executor_main, args=(cfg, path, sync))
        # --lock-memory: Python's small objects through malloc, which then keeps what it frees
        # (paam.ros.rt.lock_memory), instead of pymalloc's arenas, which Python unmaps when
        # they empty and maps afresh: a fresh page, a fault
        with common.environ({"PYTHONMALLOC": "malloc"} if cfg["lock_memory"]
                            and method != "ros2" else {}):
            p.start()
        procs.append((p, path, name))
    for _ in procs:  # every executor set up (nodes, clients, registrations)
        try:
            sync["ready"].get(timeout=120)
        except Exception:  # noqa: BLE001 - queue.Empty
            break
    # what the host took from the CPUs meanwhile (a with block: no sampler left on a failure)
    with (common.HostStat() if sample_host else contextlib.nullcontext()) as host:
        start_at = time.monotonic() + 0.3
        sync["start_at"].value = start_at
        sync["go"].set()
        # end_ns: each instance's end, CLOCK_MONOTONIC ns (the executors' and HostStat's clock)
        # gc_ns: per executor process, its collector's pauses (common.GcPauses.array)
        results = {"latency_ms": {}, "gap_ms": {}, "end_ns": {}, "missed": {}, "rt": {},
                   "body_excess_ms": [], "stages_us": np.zeros((0, 4)), "stage_chain": [],
                   "t0_ns": int(start_at * 1e9), "gc_ns": {}, "executor_of": {},
                   "faults": {}}
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
            common.join_child(p, path, f"{method}: executor {name}",
                              deadline - time.monotonic())
            with np.load(path) as z:
                for i, chain in enumerate(z["names"]):
                    lat = z[f"lat_{chain}"]
                    results["latency_ms"][str(chain)] = (lat[:, 1] - lat[:, 0]) / 1e6
                    results["gap_ms"][str(chain)] = lat[:, 2] / 1e6
                    results["end_ns"][str(chain)] = lat[:, 1]
                    results["missed"][str(chain)] = int(z["missed"][i])
                    results["executor_of"][str(chain)] = name
                results["rt"][name] = str(z["rt_note"])
                results["gc_ns"][name] = z["gc_ns"]
                results["faults"][name] = [int(x) for x in z["faults"]]
                results["body_excess_ms"].extend(z["body_excess"].tolist())
                st = z["stages_ns"]
                results["stages_us"] = np.vstack([results["stages_us"], st[:, 1:] / 1e3])
                results["stage_chain"].extend(str(z["names"][i]) for i in st[:, 0])
        if sampler is not None:
            sampler.join(max(0.0, start_at + warmup + duration - time.monotonic()) + 5)
            if len(server_faults) == 2 and None not in server_faults:
                before, after = server_faults
                results["server_faults"] = [a - b for a, b in zip(after, before)]
    if host is not None:
        results.update(common.host_series(host))
    return results


def _process_faults(pid: int) -> "list[int] | None":
    """A process's page faults so far, [minor, major], from /proc/PID/stat; None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the command name
    except OSError:
        return None
    return [int(fields[7]), int(fields[9])]  # minflt, majflt (fields 10 and 12 of stat)


# -- the server ---------------------------------------------------------------------------------


# paamd's stages outside the queue and the device: the overhead experiment's LOCAL_STAGES, by
# their short names here
_STAGE_NAMES = {"dispatch": "doorbell + dispatch", "launch": "launch",
                "completion": "completion", "client wake": "client wake"}
STAGES = tuple(_STAGE_NAMES)
_STAGE_STAMPS = tuple(next((start, end) for name, start, end in LOCAL_STAGES if name == full)
                      for full in _STAGE_NAMES.values())


def critical_chain(spec):
    """The most critical chain (None if all are best-effort): the one whose requests nothing
    outranks, whose maximum the bound is checked against first."""
    return max((c for c in spec.chains if not c.best_effort), key=lambda c: c.priority,
               default=None)


def measured_costs(result: dict, spec) -> dict:
    """What a PAAM run measured of the analysis' inputs, from the most critical chain, whose
    requests nothing outranks in the server or on the device and whose executor nothing else
    delays: epsilon (ms), the largest server overhead of one of its requests, i.e. the sum of
    the stages outside the queue and the device (submitted -> dequeued, picked -> device start,
    device end -> completed -> client woken; the launch stage also holds the device-side wait
    for lower buckets' blocks, which the analysis charges to kappa: counting it here is on the
    safe side). A less critical chain's stages also hold interference the analysis bounds by
    itself (a higher bucket's kernels occupying the device, a higher executor holding the CPU
    while the client should wake). And the rclpy/Python cost per callback (ms) that the declared
    WCETs leave out: the largest callback CPU time beyond its burn, plus the largest time per
    callback that chain spent outside its callbacks (executor, messages)."""
    top = critical_chain(spec)
    st = result["stages_us"]
    mine = np.asarray([top is not None and c == top.name for c in result["stage_chain"]], bool)
    eps = float(st[mine].sum(axis=1).max()) / 1e3 if mine.any() else None
    excess = result["body_excess_ms"]
    body = max(0.0, max(excess)) if excess else 0.0
    gap = result["gap_ms"].get(top.name) if top is not None else None
    executor = max(0.0, float(gap.max()) / len(top.callbacks)) if gap is not None and gap.size \
        else 0.0
    return {"chain": top.name if top else None, "epsilon_ms": eps, "body_ms": body,
            "executor_ms": executor, "delta_ms": body + executor,
            "requests": int(mine.sum())}


def raise_server_threads(pid: int, dev: int) -> str:
    """nice -20 for paamd's threads that are not device workers (the dispatcher, the control
    thread): what ``paamd --rt`` does for its dispatcher where SCHED_FIFO is denied, applied by
    hand under ``--rt nice``, which runs paamd without ``--rt`` to play a machine that denies
    SCHED_FIFO.
    """
    notes = []
    for tid in sorted(int(t) for t in os.listdir(f"/proc/{pid}/task")):
        if tid == pid:
            continue
        try:
            if os.sched_getscheduler(tid) != os.SCHED_OTHER or os.sched_getaffinity(tid) == {dev}:
                continue  # a worker
            os.setpriority(os.PRIO_PROCESS, tid, -20)
            notes.append(f"{tid}: nice -20")
        except OSError as err:
            notes.append(f"{tid}: unchanged ({err})")
    return "paamd dispatcher/control threads: " + (", ".join(notes) or "none found")


def calibrate(socket: str, cpus: list[int], n: int = 2000) -> dict:
    """Server overhead (round trip less kernel, µs) of ``n`` requests on the idle server."""
    import paam
    common.pin_this_thread(cpus)
    over = []
    with paam.Client(priority=100, kernels=["spin"], wait="suspend", socket=socket,
                     name="eval-calibration") as c:
        for i in range(n + 50):
            c.request("spin", duration_ms=0.0)
            t = c.timestamps("spin")
            if i >= 50:
                over.append(((t["woken"] - t["submitted"]) - (t["device_end"] - t["device_start"]))
                            / 1e3)
    common.pin_this_thread(range(os.cpu_count() or 1))
    return common.summarize(over)


# -- driver -------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from paam.ros import ROS_MISSING_HINT, ros_available
    if not ros_available():
        print(f"paam eval case-study-1: {ROS_MISSING_HINT}")
        return 2
    try:
        import std_msgs.msg  # noqa: F401
    except ImportError:
        print("paam eval case-study-1: std_msgs is missing (scripts/requirements-ros.txt)")
        return 2
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(100, 200)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if args.quick:
        args.scale = min(args.scale, 0.2)
        args.duration = min(args.duration, 2.5)
        args.calibration = min(args.calibration, 1.5)
        args.chains = args.chains or "chain1,chain2,chain3,be1"
    methods = common.parse_methods(args.methods)
    if args.scale <= 0 or args.duration <= 0:
        raise SystemExit("--scale and --duration must be positive")
    if args.calibration < 0:
        raise SystemExit("--calibration must be 0 (none) or positive")
    cpus = common.host_cpus(args.backend)
    dev = common.device_cpu() if args.backend == "cpu" else -2
    spec, mapping = scaled_system(args.system, args.scale, cpus)
    if args.chains:
        keep = [c.strip() for c in args.chains.split(",") if c.strip()]
        unknown = sorted(set(keep) - {c.name for c in spec.chains})
        if unknown:
            raise SystemExit(f"--chains: unknown {unknown}")
        spec.chains = [c for c in spec.chains if c.name in keep]
        used = {cb.executor for c in spec.chains for cb in c.callbacks}
        spec.executors = {k: v for k, v in spec.executors.items() if k in used}
        mapping = {k: v for k, v in mapping.items() if k in used}
    # paamd (dispatcher, control thread, CUDA workers) on the cores no executor uses, where
    # there are any: on a shared core it would wait for the executors' fair-scheduler slices.
    server_cpus = common.server_cores(
        args, sorted(set(range(os.cpu_count() or 1)) - set(mapping.values()) - {dev}))
    if args.wait and args.wait != "suspend" and not server_cpus:
        # paamd's dispatcher would share a core with executors above it: one spinning there
        # would keep its own request from being dispatched.
        print(f"  --wait {args.wait} ignored: no core left to paamd; the executors wait as "
              "the system says", flush=True)
    elif args.wait:
        set_wait(spec, args.wait)
    buckets = next(iter(spec.accelerators.values())).buckets
    fair = fair_buckets(spec, args)
    out = common.out_dir(args.out)
    meta = common.machine_meta(args.backend)
    print(f"paam eval case-study-1: {len(spec.chains)} chains on {len(spec.executors)} executor "
          f"processes, times x{args.scale:g}, {args.duration:g} s per method\n"
          f"  {common.machine_line(meta)}\n  executor CPUs: "
          + ", ".join(f"{k}->{v}" for k, v in mapping.items())
          + (f"; device core {dev}" if args.backend == "cpu" else "")
          + (f"; paamd on CPUs {','.join(map(str, server_cpus))}" if server_cpus else ""),
          flush=True)

    from paam.testing import start_server
    keys = common.KEY_OF_METHOD
    results = {}
    calibration = calib_run = None
    server_note = ""
    paamd_said: list[str] = []
    worker_sched: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="paam-eval-") as tmp, \
            (common.keep_awake(common.awake_cpus(cpus, server_cpus, args))
             if args.keep_awake else contextlib.nullcontext()):
        for i, m in enumerate(methods, 1):
            print(f"[{i}/{len(methods)}] {m} ...", flush=True)
            if m == "PAAM":
                # --rt: SCHED_FIFO bucket workers (CPU backend) and a dispatcher above them
                # (any backend; nice -20 where SCHED_FIFO is denied).
                # polling threads: the dispatcher and the workers (one per bucket, and on
                # cuda one per best-effort lane of the lowest)
                rt_args = (([] if args.rt == "nice" else ["--rt"])
                           + common.server_poll_args(
                               args, server_cpus, common.paamd_workers(args.backend, buckets) + 1)
                           + common.cuda_wait_args(args)
                           + common.spin_bucket_args(args, buckets, server_cpus)
                           + (["--fair-buckets", str(next(iter(fair.values())))] if fair else [])
                           + (["--lock-memory"] if args.lock_memory else []))
                rt_args += (["--dispatcher-priority", "0"] if args.server_as_shipped
                            else common.dispatcher_args(
                                args, max(e.priority for e in spec.executors.values())))
                with start_server(buckets=buckets, backend=args.backend,
                                  device_cpu=dev if args.backend == "cpu" else None,
                                  extra_args=rt_args, cpus=server_cpus) as srv:
                    if args.rt == "nice" and not args.server_as_shipped:
                        server_note = raise_server_threads(srv.pid, dev)
                    worker_sched = common.paamd_worker_sched(srv.pid)
                    calibration = calibrate(srv.socket_path, cpus)
                    if args.calibration > 0:
                        print(f"      calibration run ({args.calibration:g} s) ...", flush=True)
                        calib_run = run_method(keys[m], spec, args, tmp, srv.socket_path, dev,
                                               duration=args.calibration, tag="calibration",
                                               sample_host=False)
                    results[m] = run_method(keys[m], spec, args, tmp, srv.socket_path, dev,
                                            server_pid=srv.pid)
                    paamd_said = common.paamd_startup(srv)
            else:
                results[m] = run_method(keys[m], spec, args, tmp, None, dev)

    # The bound: epsilon and the rclpy/Python cost measured under load in the calibration run
    # (not in the run the bound is compared with), kappa.
    kappa = (args.preemption_ms if args.preemption_ms is not None
             else common.default_kappa(args.backend))
    in_run = {}
    if "PAAM" in results and len(results["PAAM"]["stages_us"]):
        st = results["PAAM"]["stages_us"]
        in_run = {name: common.summarize(st[:, j]) for j, name in enumerate(STAGES)}
        in_run["server overhead"] = common.summarize(st.sum(axis=1))
    source = calib_run if calib_run is not None else results.get("PAAM")
    measured_in = "the calibration run" if calib_run is not None else "the measured run itself"
    costs = measured_costs(source, spec) if source is not None else None
    costs_in_run = measured_costs(results["PAAM"], spec) if "PAAM" in results else None
    if args.overhead_ms is not None:
        eps, eps_from = args.overhead_ms, "--overhead-ms"
    elif costs is not None and costs["epsilon_ms"] is not None:
        eps = costs["epsilon_ms"]
        eps_from = f"max server overhead of a {costs['chain']} request in {measured_in}"
    elif calibration:
        eps, eps_from = calibration["max"] / 1e3, "max on the idle server"
    else:
        eps, eps_from = next(iter(spec.accelerators.values())).overhead, "the system file"
    delta = costs["delta_ms"] if costs else 0.0
    bound_plain, sys_plain = bounds(spec, eps, kappa)
    bound_ros, _ = bounds(spec, eps, kappa, delta)
    from paam.analysis.model import dump_yaml
    (out / "system_scaled.yaml").write_text(
        f"# case study 1 scaled x{args.scale:g}, CPUs mapped for this machine, epsilon measured "
        f"({eps:.3f} ms), kappa {kappa} ms.\n# `paam analyze --full` on this file gives the "
        "'bound' column.\n" + dump_yaml(sys_plain))

    rows, raw = [], []
    summary = {}
    for ch in sorted(spec.chains, key=lambda c: -c.priority):
        for m in methods:
            lat = results[m]["latency_ms"].get(ch.name, np.array([]))
            s = common.summarize(lat)
            s["missed"] = results[m]["missed"].get(ch.name, 0)
            s["outside_callbacks_ms"] = common.summarize(results[m]["gap_ms"].get(ch.name, []))
            summary.setdefault(ch.name, {})[m] = s
            rows.append({"chain": ch.name, "best_effort": ch.best_effort, "method": m,
                         "instances": s["n"], "missed": s["missed"], "mean_ms": s["mean"],
                         "p99_ms": s["p99"], "max_ms": s["max"],
                         "bound_ms": _num(bound_plain[ch.name]),
                         "bound_with_ros_cost_ms": _num(bound_ros[ch.name])})
            ends = results[m]["end_ns"].get(ch.name, np.zeros(0, np.int64))
            raw.extend({"chain": ch.name, "method": m, "latency_ms": float(x),
                        "t_s": (int(e) - results[m]["t0_ns"]) / 1e9} for x, e in zip(lat, ends))
    common.write_csv(out / "summary.csv", rows)
    common.write_csv(out / "latency.csv", raw)
    stage_rows = []
    for run_name, r in (("calibration", calib_run), ("measured", results.get("PAAM"))):
        if r is None:
            continue
        for chain, row in zip(r["stage_chain"], r["stages_us"]):
            stage_rows.append({"run": run_name, "chain": chain,
                               **{f"{k.replace(' ', '_')}_us": round(float(v), 1)
                                  for k, v in zip(STAGES, row)}})
    if stage_rows:
        common.write_csv(out / "paam_stages.csv", stage_rows)
    # the host: what it took from the CPUs in each measured run, and every chain's instances
    # apart for where it left them alone
    host, by_steal, host_rows = {}, {}, []
    for m in methods:
        r = results[m]
        host[m] = common.host_summary(r, mapping.values())
        host_rows.extend({"method": m, **row}
                         for row in common.host_rows(r, mapping.values(), r["t0_ns"]))
        if "error" not in host[m]:
            by_steal[m] = {ch.name: latency_by_steal(r, ch.name, _num(bound_plain[ch.name]))
                           for ch in sorted(spec.chains, key=lambda c: -c.priority)}
    if host_rows:
        common.write_csv(out / "host_stat.csv", host_rows)
    top = critical_chain(spec)
    gc = {m: gc_report(results[m], top.name if top else None,
                       _num(bound_plain[top.name]) if top else None) for m in methods}
    params = {k: v for k, v in vars(args).items() if k != "func"}
    demand = bucket_demand(spec) if args.backend == "cpu" else None  # the CPU device core's
    common.write_json(out / "summary.json", {
        "meta": meta, "params": params, "direct_wait": common.direct_wait_label(args, methods),
        "cpu_mapping": mapping, "device_cpu": dev,
        "epsilon_ms": eps, "epsilon_from": eps_from, "epsilon_idle_us": calibration,
        "kappa_ms": kappa, "calibration_s": args.calibration if calib_run is not None else 0,
        "costs_for_bound": costs, "costs_in_measured_run": costs_in_run,
        "paam_stages_in_run_us": in_run, "server_threads": server_note,
        "paamd_startup": paamd_said,
        "server_cpus": server_cpus,
        "ros_cost_per_callback_ms": delta,
        "bound_ms": {k: _num(v) for k, v in bound_plain.items()},
        "bound_with_ros_cost_ms": {k: _num(v) for k, v in bound_ros.items()},
        "os_priorities": {m: r["rt"] for m, r in results.items()},
        "executor_wait": {e.name: e.wait for e in spec.executors.values()},
        # each method's start, CLOCK_MONOTONIC ns: latency.csv's t_s counts from it (to line the
        # instances up with a trace taken meanwhile)
        "t0_ns": {m: r["t0_ns"] for m, r in results.items()},
        "device_bucket_demand": demand,
        "fair_buckets": fair,  # the lowest buckets paamd kept off SCHED_FIFO (cpu backend)
        "paamd_workers": worker_sched,  # each device worker's OS scheduling, read from /proc
        "results": summary, "host": host, "latency_by_host_steal": by_steal, "gc": gc,
        # per method and executor: the process's page faults in the measured window
        "page_faults": {m: {"minor_major": r["faults"],
                            **({"paamd": r["server_faults"]} if "server_faults" in r else {})}
                        for m, r in results.items()}})
    text = render(spec, methods, summary, bound_plain, bound_ros, meta, args, eps, kappa, delta,
                  results, in_run, server_note, eps_from, measured_in, calibration, costs_in_run,
                  host, by_steal, gc, demand, fair, worker_sched)
    (out / "summary.txt").write_text(text)
    print("\n" + text)
    try:
        plot_max(spec, methods, summary, bound_plain, bound_ros, out / "fig9_max_latency.png", args)
        plot_dist(spec, methods, results, bound_plain, out / "fig10_distributions.png", args)
        panels = _host_panels(results, methods, top.name) if top is not None else []
        if panels:
            common.plot_host(panels, out / "fig10b_host_steal.png",
                             f"Case study 1 (times x{args.scale:g}): {top.name}'s latency over "
                             "time (dashed: its bound), and what the host stole from the CPUs",
                             ylabel=f"{top.name} (ms)",
                             bounds=[_num(bound_plain[top.name])] * len(panels))
        print(f"wrote {out}/summary.csv, latency.csv, paam_stages.csv, summary.json, summary.txt, "
              "system_scaled.yaml, fig9_max_latency.png, fig10_distributions.png"
              + (", host_stat.csv, fig10b_host_steal.png" if panels else ""))
    except Exception as exc:  # noqa: BLE001
        print(f"wrote {out}/summary.*, latency.csv (no plots: {exc})")
    return 0


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def latency_by_steal(r: dict, chain: str, bound: float | None) -> dict:
    """A chain's instances in a run apart for where the host left the CPUs alone and the others
    (:func:`common.split_by_steal` of the steal around each, :func:`common.steal_around`), and
    how many of those above ``bound`` fell in each: whether a maximum beyond the bound is the
    hypervisor's."""
    lat = r["latency_ms"].get(chain, np.zeros(0))
    around = common.steal_around(r["end_ns"].get(chain, np.zeros(0, np.int64)), lat,
                                 r["host_t_ns"], r["host_steal_ms"])
    split = common.split_by_steal(lat, around)
    if bound is not None:
        q, over = split["quiet_steal_ms"], lat > bound  # (NaN, no sample near: in neither)
        split["bound_ms"] = bound
        split["above_bound"] = {"quiet": int((over & (around <= q)).sum()),
                                "noisy": int((over & (around > q)).sum())}
    return split


def render(spec, methods, summary, bound_plain, bound_ros, meta, args, eps, kappa, delta,
           results, in_run, server_note, eps_from, measured_in, idle, costs_in_run,
           host=None, by_steal=None, gc=None, demand=None, fair=None,
           worker_sched=None) -> str:
    lines = [f"Case study 1, times x{args.scale:g}, {args.duration:g} s per method; chain "
             f"latency in ms (max / p99; missed = timer expiries skipped)",
             common.machine_line(meta),
             f"bound: paam analyze --full with epsilon {eps:.3f} ms ({eps_from}), "
             f"kappa {kappa} ms; '+ros' adds {delta:.3f} ms to every callback's WCET, the rclpy/"
             f"Python cost measured in {measured_in} (largest in-callback cost beyond the burn + "
             "largest per-callback time the top chain spent outside its callbacks); '!' = beyond "
             "the deadline, where the analysis' one-instance-at-a-time assumption no longer "
             "holds", ""]
    head = ["chain", "period"] + [f"{m} max/p99" for m in methods] + ["missed", "bound", "+ros"]
    rows = [head]
    for ch in sorted(spec.chains, key=lambda c: -c.priority):
        cells = [ch.name + (" (BE)" if ch.best_effort else ""), common.fmt(ch.period, 1)]
        for m in methods:
            s = summary[ch.name][m]
            cells.append(f"{common.fmt(s['max'])} / {common.fmt(s['p99'])}")
        cells.append("/".join(str(summary[ch.name][m]["missed"]) for m in methods))
        for b in (bound_plain[ch.name], bound_ros[ch.name]):
            cells.append("unbounded" if _num(b) is None else
                         common.fmt(b) + ("!" if b > ch.effective_deadline else ""))
        rows.append(cells)
    lines.append(common.table(rows, right=range(1, len(head))))
    lines.append("")
    for m, r in results.items():
        notes = sorted(set(r["rt"].values()))
        lines.append(f"{m} executor OS priorities: " + " | ".join(notes))
    if in_run:
        lines.append("PAAM request stages in the run (all chains), max µs: " + ", ".join(
            f"{k} {v['max']:.0f}" for k, v in in_run.items()) + " (p99: " + ", ".join(
            f"{v['p99']:.0f}" for v in in_run.values()) + ")")
    if idle:
        lines.append(f"server overhead on the idle server (2000 requests): max "
                     f"{idle['max']:.0f} µs, mean {idle['mean']:.1f} µs")
    if costs_in_run:
        e = costs_in_run["epsilon_ms"]
        lines.append("in the measured PAAM run itself: epsilon "
                     + (f"{e:.3f} ms" if e is not None else "n/a")
                     + f", rclpy cost {costs_in_run['delta_ms']:.3f} ms per callback")
    if server_note:
        lines.append(server_note)
    if "PAAM" in methods and demand:
        lines.append(common.device_core_line(demand, meta, fair))
    if "PAAM" in methods and worker_sched:
        lines.append("paamd's device workers (bucket.lane): " + ", ".join(
            f"{name.split('.', 1)[-1]} {sched}" for name, sched in worker_sched.items()))
    if "PAAM" in methods:
        lines.append(f"paamd busy-poll window: {common.server_poll_label(args)}, threads "
                     f"{common.server_pin_label(args)}; PAAM executors "
                     "wait: " + ", ".join(f"{e.name} {e.wait}" for e in spec.executors.values()))
    if direct_wait := common.direct_wait_label(args, methods):
        lines.append(direct_wait)
    if args.keep_awake:
        lines.append("--keep-awake: a SCHED_IDLE busy loop on every core (but a polling paamd's) "
                     "during every method")
    if getattr(args, "executor_wait", "own") == "rclpy":
        lines.append("--executor-wait rclpy: the PicasExecutor waits through rclpy's "
                     "_wait_for_ready_callbacks")
    if "PAAM" in summary.get(spec.chains[0].name, {}):
        over = [ch.name for ch in spec.chains if not ch.best_effort
                and _num(bound_plain[ch.name]) is not None
                and summary[ch.name]["PAAM"]["max"] > bound_plain[ch.name]]
        lines.append("PAAM maxima above the bound (paper WCETs): " + (", ".join(over) or "none"))
    if host:
        _render_host(lines, spec, methods, host, by_steal or {})
    if gc:
        _render_gc(lines, methods, gc, args.gc)
    _render_faults(lines, methods, results)
    return "\n".join(lines) + "\n"


def _render_host(lines: list, spec, methods, host: dict, by_steal: dict) -> None:
    """summary.txt's host block: per method the steal, and the critical chain's instances where
    the host left the CPUs alone against the others (and, with a bound, those beyond it)."""
    top = critical_chain(spec)
    lines.append("the host (/proc/stat each second): ms stolen per s from all CPUs, mean / max "
                 f"(executor cores), vCPUs the guest used (busy at least "
                 f"{common.ACTIVE_BUSY_MS_PER_S:g} ms/s), CPUs busy" + (
                     f"; {top.name} where the host stole at most {common.QUIET_STEAL_MS:g} ms/s "
                     "around the instance | more (n, p99 / max ms); instances above the bound "
                     "(paper WCETs; how many noisy); latency's correlation with steal"
                     if top is not None else ""))
    for m in methods:
        h = host.get(m, {})
        if "error" in h:
            lines.append(f"  {m}: not sampled ({h['error']})")
            continue
        line = f"  {m}: {common.steal_text(h)}"
        sp = by_steal.get(m, {}).get(top.name) if top is not None else None
        if sp:
            q, n, ab = sp["quiet"], sp["noisy"], sp.get("above_bound")
            line += (f" | quiet {q['n']}, {common.fmt(q['p99'])} / {common.fmt(q['max'])} | "
                     f"noisy {n['n']}, {common.fmt(n['p99'])} / {common.fmt(n['max'])}")
            if ab:
                line += (f" | above the bound {common.fmt(sp['bound_ms'])}: "
                         f"{ab['quiet'] + ab['noisy']} ({ab['noisy']} noisy)")
            line += f" | r {common.fmt(sp['correlation'], 2)}"
        lines.append(line)


def gc_report(r: dict, chain: str | None, bound: float | None) -> dict:
    """Python's collector in a run: per executor process its collections and longest pause
    (:func:`common.gc_summary`), and for ``chain`` (the critical one) how many of its instances
    had a collection of their own process inside them, and of those above ``bound``."""
    out: dict = {"by_executor": {e: common.gc_summary(p) for e, p in r["gc_ns"].items()}}
    if chain is None or chain not in r["end_ns"]:
        return out
    ex = r["executor_of"][chain]
    end, lat = r["end_ns"][chain], r["latency_ms"][chain]
    c, hit = common.gc_instances(end, lat, r["gc_ns"][ex])
    c = {"chain": chain, "executor": ex, **c}
    if bound is not None:
        over = lat > bound
        c.update(bound_ms=bound, above_bound=int(over.sum()),
                 above_bound_during_a_collection=int((over & hit).sum()))
    out["critical"] = c
    return out


def _render_gc(lines: list, methods, gc: dict, mode: str) -> None:
    """summary.txt's collector block: per method the longest pause of any executor, and the
    critical chain's instances with a collection of their own process inside them."""
    lines.append(f"Python's collector (--gc {mode}): collections gen 0/1/2 summed over the "
                 "executors, longest pause (ms); the critical chain's instances with a "
                 "collection of its process inside (of them above the bound)")
    for m in methods:
        g = gc.get(m, {})
        line = f"  {m}: {common.gc_line(g.get('by_executor', {}).values())}"
        c = g.get("critical")
        if c:
            line += (f" | {c['chain']}: {c['during_a_collection']} of {c['instances']}"
                     + (f" ({c['above_bound_during_a_collection']} of the {c['above_bound']} "
                        f"above {common.fmt(c['bound_ms'])})" if "bound_ms" in c else ""))
        lines.append(line)


def _render_faults(lines: list, methods, results: dict) -> None:
    """summary.txt's page-fault line: per method the executors' page faults in the measured
    window (a fault in a callback is time the analysis does not count)."""
    parts = []
    for m in methods:
        f = results[m].get("faults", {})
        if f:
            server = results[m].get("server_faults")
            parts.append(f"{m} {sum(v[0] for v in f.values())} minor / "
                         f"{sum(v[1] for v in f.values())} major (most in one executor: "
                         f"{max(v[0] + v[1] for v in f.values())}"
                         + (f"; paamd {server[0]} minor / {server[1]} major" if server else "")
                         + ")")
    if parts:
        lines.append("page faults of the executors in the measured run: " + "; ".join(parts))


def _host_panels(results, methods, chain: str) -> list:
    """common.plot_host's panels: per sampled run, ``chain``'s instances and the steal, in s
    from the run's start."""
    panels = (common.host_panel(m, results[m],
                                results[m]["end_ns"].get(chain, np.zeros(0, np.int64)),
                                results[m]["latency_ms"].get(chain, np.zeros(0)))
              for m in methods)
    return [p for p in panels if p is not None]


def plot_max(spec, methods, summary, bound_plain, bound_ros, path: Path, args) -> None:
    plt = common.pyplot()
    chains = sorted(spec.chains, key=lambda c: -c.priority)
    x = np.arange(len(chains))
    w = 0.8 / len(methods)
    fig, ax = plt.subplots(figsize=(9, 4))
    for j, m in enumerate(methods):
        xs = x + (j - (len(methods) - 1) / 2) * w
        ax.bar(xs, [summary[c.name][m]["max"] for c in chains], w, color=common.COLORS[m],
               label=f"{m} max")
        ax.scatter(xs, [summary[c.name][m]["p99"] for c in chains], marker="_", s=120,
                   color="k", zorder=3, label="p99" if j == 0 else None)
    bp = [_num(bound_plain[c.name]) for c in chains]
    br = [_num(bound_ros[c.name]) for c in chains]
    ax.scatter(x, [b if b is not None else np.nan for b in bp], marker="*", s=110,
               color=common.COLORS["bound"], zorder=4, label="bound (analysis)")
    ax.scatter(x, [b if b is not None else np.nan for b in br], marker="*", s=70,
               facecolors="none", edgecolors="#d62728", zorder=4, label="bound + rclpy cost")
    ax.set_xticks(x, [c.name + ("\n(BE)" if c.best_effort else "") for c in chains])
    ax.set_ylabel("end-to-end latency (ms)")
    ax.set_yscale("log")
    ax.legend(fontsize=7, ncol=3)
    ax.set_title(f"Case study 1 (times x{args.scale:g}): maximum latency per chain (Fig. 9)",
                 fontsize=10)
    common.save(fig, path)


def plot_dist(spec, methods, results, bound_plain, path: Path, args) -> None:
    plt = common.pyplot()
    chains = sorted(spec.chains, key=lambda c: -c.priority)
    fig, axes = plt.subplots(2, (len(chains) + 1) // 2, figsize=(11, 5.5), squeeze=False)
    for ax, c in zip(axes.flat, chains):
        data = [results[m]["latency_ms"].get(c.name, np.array([np.nan])) for m in methods]
        data = [d if d.size else np.array([np.nan]) for d in data]
        parts = ax.boxplot(data, whis=(0, 100), patch_artist=True, widths=0.6)
        for patch, m in zip(parts["boxes"], methods):
            patch.set_facecolor(common.COLORS[m])
        b = _num(bound_plain[c.name])
        top = max((float(np.nanmax(d)) for d in data if np.isfinite(d).any()), default=1.0)
        if b is not None and b <= 1.5 * top:
            ax.axhline(b, color="k", ls="--", lw=0.8)
            ax.set_ylim(0, max(top, b) * 1.1)
        else:
            ax.set_ylim(0, top * 1.1)
            ax.text(0.98, 0.95, "bound " + (f"{b:.0f} ms" if b is not None else "unbounded")
                    + " (off scale)", transform=ax.transAxes, ha="right", va="top", fontsize=7)
        ax.set_xticks(range(1, len(methods) + 1), methods, fontsize=7)
        ax.set_title(c.name + (" (BE)" if c.best_effort else ""), fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(chains):]:
        ax.axis("off")
    fig.suptitle(f"Case study 1 (times x{args.scale:g}): latency distributions (Fig. 10), ms; "
                 "whiskers min/max, dashed = bound", fontsize=10)
    common.save(fig, path)
