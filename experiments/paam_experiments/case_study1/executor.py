"""One executor process of case study 1: its chains as rclpy timers and subscriptions, each
callback burning its CPU WCET and then running its segments, every instance's latency
recorded, and PAAM's request stages.

The process writes its records to an ``.npz`` file that :mod:`.runner` reads back.
"""
from __future__ import annotations

import os
import resource
import time

import numpy as np

from paam.ros.rt import apply_rt, dds_threads_rt, lock_memory
from paam_experiments.case_study1.config import ExecutorPlan
from paam_experiments.common.collector import GcPauses
from paam_experiments.common.cpus import at_normal_priority, pin_this_thread
from paam_experiments.common.procs import child_failed, synchronous_start
from paam_experiments.overhead import LOCAL_STAGES

# paamd's stages outside the queue and the device: the overhead experiment's LOCAL_STAGES, by
# their short names here
_STAGE_NAMES = {"dispatch": "doorbell + dispatch", "launch": "launch",
                "completion": "completion", "client wake": "client wake"}
STAGES = tuple(_STAGE_NAMES)
#: each of STAGES as the request timestamps (start, end) it spans
STAGE_STAMPS = tuple(next((start, end) for name, start, end in LOCAL_STAGES if name == full)
                     for full in _STAGE_NAMES.values())


def _burn(ns: int) -> None:
    end = time.thread_time_ns() + ns
    while time.thread_time_ns() < end:
        pass


def executor_main(plan: ExecutorPlan, path: str, sync: dict) -> None:
    """The process's entry: runs ``plan``, its records into ``path``; a failure is left for
    the parent (:func:`paam_experiments.common.procs.join_child`)."""
    import warnings
    warnings.filterwarnings("ignore", message="coroutine .* was never awaited")
    try:
        _executor(plan, path, sync)
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        sync["ready"].put("failed")
        child_failed(path, exc)


def _executor(plan: ExecutorPlan, path: str, sync: dict) -> None:
    # Every thread of the process (DDS's included) on the executor's core and, for PiCAS and
    # PAAM, at the executor's OS priority, before they exist: threads inherit both from this
    # one, as from `chrt`/`nice` on a C++ executor process. (At nice 0 on a core shared with a
    # best-effort executor, DDS's receive thread would wait for the fair scheduler's slice
    # before it hands the next callback its message.) All but DDS's sender thread, which
    # dds_threads_rt leaves at SCHED_OTHER (its docstring says why).
    pin_this_thread([plan.cpu])
    if plan.method != "ros2":
        # (the PicasExecutor applies the same to this thread again below, and reports it)
        apply_rt(plan.os_priority, plan.cpu, mode=plan.rt, best_effort=plan.best_effort,
                 log=lambda _line: None)
    import rclpy
    from rclpy.clock import Clock, ClockType
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile
    from std_msgs.msg import Int64

    import paam
    from paam.ros import (CallbackSpec, Chain, create_lean_node, lean_publisher_options,
                          lean_subscription_options)

    method = plan.method
    spins = method == "paam" and plan.wait != "suspend"  # the executor spins on paamd
    ctx = Context()
    with dds_threads_rt():  # DDS's threads start with the context and the first node
        rclpy.init(context=ctx)
        node = create_lean_node(f"cs1_{plan.executor}_{os.getpid()}", context=ctx)
    steady = Clock(clock_type=ClockType.STEADY_TIME)
    qos = QoSProfile(depth=10)
    kernel_drop = method != "paam" and plan.backend == "cpu" and not plan.direct_keeps_priority

    chains = []
    for ch in plan.chains:
        chains.append(Chain(
            ch.name, priority=ch.priority, period_ms=ch.period,
            callbacks=[CallbackSpec(cb.name, cpu_wcet_ms=cb.wcet, segments_ms=cb.segments,
                                    kernels=["spin"])
                       for cb in ch.callbacks],
            executor=plan.executor, executor_cpu=plan.cpu,
            executor_priority=plan.os_priority, executor_wait=plan.wait,
            best_effort=ch.best_effort))

    latencies: dict[str, list[tuple[int, int, int]]] = {c.name: [] for c in chains}
    body_wall: dict[tuple[str, int], int] = {}  # (chain, release) -> callback wall time so far
    body_excess: list[float] = []   # ms of callback CPU time beyond the burn
    # PAAM: chain index (into plan.chains), dispatch, launch, completion, wake
    stages_ns: list[tuple[int, int, int, int, int]] = []
    chain_index = {ch.name: i for i, ch in enumerate(plan.chains)}
    calls = {c.name: 0 for c in chains}
    first_expiry: dict[str, int] = {}
    record_from = [0]
    clients = []
    timers = {}

    deadlines = {ch.name: ch.deadline for ch in plan.chains}

    def make_client(chain: Chain, cb_name: str):
        if method == "paam":
            # the chain's deadline: paamd --queue edf orders a bucket by it (fifo ignores it)
            c = chain.client(cb_name, timing=False, socket=plan.socket,
                             deadline_ms=deadlines[chain.name])
        else:
            c = paam.Client(priority=chain.priority, kernels=["spin"], wait=plan.wait,
                            direct=True, direct_backend=plan.backend,
                            device_cpu=plan.device_cpu)
        clients.append(c)
        return c

    def run_segment(client, ms: float, chain_name: str, release: int) -> None:
        if method == "paam":
            client.release_ns = release  # the chain instance's: its absolute deadline under edf
        if kernel_drop:
            at_normal_priority(lambda: client.request("spin", duration_ms=ms))
        else:
            client.request("spin", duration_ms=ms)
        if method == "paam" and time.monotonic_ns() >= record_from[0]:
            t = client.timestamps("spin")
            stages_ns.append((chain_index[chain_name],
                              *(t[end] - t[start] for start, end in STAGE_STAMPS)))

    for chain in chains:
        n = len(chain.callbacks)
        pubs = [node.create_publisher(Int64, f"{plan.topic_prefix}/{chain.name}/cb{i}", qos,
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
                    run_segment(client, s, chain_name, release)
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
                sub = node.create_subscription(Int64, f"{plan.topic_prefix}/{chain.name}/cb{i}",
                                               on_msg, qos, **lean_subscription_options())
                chain.bind(spec.name, sub)

    rt_note = "SCHED_OTHER nice 0"
    if method == "ros2":
        ex = SingleThreadedExecutor(context=ctx)
    else:
        from paam.ros import PicasExecutor
        ex = PicasExecutor(context=ctx, lean_wait=plan.executor_wait == "own")
        for chain in chains:
            chain.configure_executor(ex)  # callback priorities (+ the RT request)
        # auto: SCHED_FIFO, else the nice ladder or SCHED_IDLE (paam.ros.rt); fifo: SCHED_FIFO
        # or nothing; nice: the ladder (SCHED_IDLE for a best-effort executor) only
        rt_note = str(ex.apply_rt(mode=plan.rt))
    ex.add_node(node)
    if plan.lock_memory and method != "ros2":  # after the setup: what is mapped now stays
        rt_note += "; " + lock_memory()

    # Common start: every executor's timers begin together (synchronous release). Python's
    # collector as --gc says from here on, its pauses recorded.
    with GcPauses(plan.gc) as gc_pauses:
        start = synchronous_start(sync, plan.executor, timers.values(), 120)
        record_from[0] = start + int(plan.warmup_s * 1e9)
        end = start + int((plan.warmup_s + plan.duration_s) * 1e9)
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
