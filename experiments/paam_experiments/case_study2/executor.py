"""One executor process: its nodes on rclpy executors, spun from the common start, its records
written at the end (:class:`.records.ProcessRecord`).

4ST runs one process per executor, each pinned to its core; MT one process of four: rclpy's
MultiThreadedExecutor for ROS 2, and for PiCAS and PAAM four PicasExecutors, one thread each
(``partitioned``), or one MultiThreadedPicasExecutor whose four threads share every callback
(``shared``). With ``--e0-executor cpp`` 4ST's E0 is the C++ program instead (:mod:`.cpp`).
"""
from __future__ import annotations

import sys
import threading
import time

import numpy as np

from paam_experiments import common
from paam_experiments.case_study2 import graph, nodes, records, threads
from paam_experiments.case_study2.callbacks import ProcessGraph
from paam_experiments.case_study2.config import ProcessConfig


def executor_main(cfg: ProcessConfig, path: str, sync: dict) -> None:
    """The spawned process's entry: the executor(s) of ``cfg``, records to ``path``; ``sync``:
    the parent's ``ready`` queue, ``go`` event and ``start_at`` (common.synchronous_start)."""
    import warnings
    warnings.filterwarnings("ignore", message="coroutine .* was never awaited")
    try:
        if cfg.e0_executor == "cpp" and list(cfg.executors) == [graph.HOT_EXECUTOR]:
            from paam_experiments.case_study2 import cpp
            cpp.run(cfg, path, sync)
        else:
            run_executor(cfg, path, sync)
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        sync["ready"].put("failed")
        common.child_failed(path, exc)


def set_priority(cfg: ProcessConfig, prio: int, cpu: int) -> str:
    """The calling thread's OS priority for PiCAS/PAAM (SCHED_FIFO, else the nice ladder)."""
    common.pin_this_thread([cpu])
    return f"{common.apply_priority(prio, cfg.rt)}, CPU {cpu}"


def drain_and_shut_down(ex, timeout_s: float) -> bool:
    """Let rclpy executor ``ex`` finish every callback it has started or queued, then shut it
    down; False if one still ran after ``timeout_s``.

    Jazzy's rclpy (7.1) does not wait in ``Executor.shutdown``: it tests its shutdown flag just
    after setting it, so it returns at once. And a MultiThreadedExecutor may still hold handlers
    queued in its thread pool, which would run after the shutdown against the executor's
    destroyed guard condition or the nodes' destroyed entities ("The following exception was
    never retrieved: cannot use Destroyable because destruction was requested"). So the pool is
    drained first, while the executor and its nodes still exist, through its ``_executor``
    (Jazzy has no public way; later rclpy adds
    ``MultiThreadedExecutor.shutdown(wait_for_threads=True)``, ros2/rclpy#1309).
    Executors that run callbacks on the spinning thread have nothing in flight once it returns."""
    from rclpy.executors import MultiThreadedExecutor
    drained = True
    if isinstance(ex, MultiThreadedExecutor):
        drain = threading.Thread(target=ex._executor.shutdown, name="drain", daemon=True)
        drain.start()
        drain.join(timeout_s)
        drained = not drain.is_alive()
    ex.shutdown(timeout_sec=0)
    return drained


def _make_executors(cfg: ProcessConfig, g: ProcessGraph, ctx, cpus: list[int],
                    rt_notes: dict[str, str]) -> dict[str, object]:
    """The process's rclpy executors by name (one "MT" for a pool of threads), its nodes added
    at their PiCAS priorities."""
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
    executors: dict[str, object] = {}
    if cfg.method == "ros2" and cfg.setup == "MT":
        ex = MultiThreadedExecutor(num_threads=4, context=ctx)
        for node in g.nodes.values():
            ex.add_node(node)
        executors["MT"] = ex
        rt_notes["MT"] = (f"rclpy MultiThreadedExecutor(4 threads), SCHED_OTHER nice 0, CPUs "
                          f"{cpus}")
    elif cfg.shared_mt:
        from paam.ros import MultiThreadedPicasExecutor
        # (the hot-path threads' floors: each thread sets its own, see _spin)
        ex = MultiThreadedPicasExecutor(len(cfg.executors), context=ctx,
                                        awaiting_holds_priority=g.async_segments,
                                        lean_wait=cfg.executor_wait == "own")
        for ex_name, names in cfg.executors.items():  # (the nodes in the 4ST order)
            for entity, prio in g.entities[ex_name]:
                ex.set_callback_priority(entity, prio)
            for n in names:
                ex.add_node(g.nodes[n])
        executors["MT"] = ex
    else:
        for ex_name, names in cfg.executors.items():
            if cfg.method == "ros2":
                ex = SingleThreadedExecutor(context=ctx)
            else:
                from paam.ros import PicasExecutor
                ex = PicasExecutor(context=ctx, awaiting_holds_priority=g.async_segments,
                                   lean_wait=cfg.executor_wait == "own")
                for entity, prio in g.entities[ex_name]:
                    ex.set_callback_priority(entity, prio)
            for n in names:
                ex.add_node(g.nodes[n])
            executors[ex_name] = ex
    return executors


def _spin(cfg: ProcessConfig, g: ProcessGraph, ex_name: str, ex, cpus: list[int], end: int,
          rt_notes: dict[str, str]) -> None:
    """One spinning thread until ``end`` (CLOCK_MONOTONIC ns), at its OS priority and core."""
    if cfg.method == "ros2":
        # (MT: rclpy's MultiThreadedExecutor starts its workers from this thread)
        common.pin_this_thread([cfg.cpus[ex_name]] if cfg.setup == "4ST" else cpus)
        if cfg.setup == "4ST":
            rt_notes[ex_name] = f"SCHED_OTHER nice 0, CPU {cfg.cpus[ex_name]}"
    elif cfg.shared_mt:  # a shared PicasExecutor thread: E<i>'s core, E0's priority
        index = list(cfg.executors).index(ex_name)
        hot_only = index < cfg.mt_hot_threads
        g.tally.ix = index
        if hot_only:
            ex.set_thread_floor(graph.HOT_PRIORITY)
        rt_notes[f"MT thread {ex_name}"] = set_priority(
            cfg, max(cfg.priorities.values()), cfg.cpus[ex_name]) + (
            f", hot path only (priority floor {graph.HOT_PRIORITY})" if hot_only else "")
    else:
        rt_notes[ex_name] = set_priority(cfg, cfg.priorities[ex_name], cfg.cpus[ex_name])
    while time.monotonic_ns() < end:
        ex.spin_once(timeout_sec=0.05)


def run_executor(cfg: ProcessConfig, path: str, sync: dict) -> None:
    """The rclpy executor process of ``cfg``: build, spin from the common start, record."""
    cpus = sorted(set(cfg.cpus.values()))
    if cfg.switch_interval_ms is not None:
        sys.setswitchinterval(cfg.switch_interval_ms / 1e3)
    # Every thread started from here (DDS's included) on the process's executor cores, or with
    # --dds-cpus spare on the cores no executor uses; each executor thread then pins itself.
    common.pin_this_thread(cfg.helper_cpus or cpus)
    if cfg.method != "ros2":
        # ... and, for PiCAS and PAAM, at the process's top executor priority: DDS's threads
        # inherit it from this one, as from `chrt`/`nice` on a C++ executor process. (At nice 0
        # beside a nice -20 executor that is busy, DDS's receive thread gets about 1% of the
        # core, and the next hot-path callback waits for its message.) All but DDS's sender
        # thread, which common.dds_threads_rt leaves at SCHED_OTHER (its docstring says why).
        common.apply_rt(max(cfg.priorities[e] for e in cfg.executors), None,
                        mode=cfg.rt, log=lambda _line: None)
    import rclpy
    from rclpy.context import Context

    ctx = Context()
    with common.dds_threads_rt():  # DDS's threads start with the context and the first node
        rclpy.init(context=ctx)
        g = ProcessGraph(cfg, ctx)
        for ex_name, names in cfg.executors.items():
            for n in names:
                nodes.build(g, graph.BY_NAME[n], ex_name)
    rt_notes: dict[str, str] = {}
    executors = _make_executors(cfg, g, ctx, cpus, rt_notes)

    # Python's collector as --gc says from here on, its pauses recorded
    with common.GcPauses(cfg.gc) as gc_pauses:
        start = common.synchronous_start(sync, cfg.name, g.timers, 180)
        g.record_from[0] = start + int(cfg.warmup_s * 1e9)
        end = start + int((cfg.warmup_s + cfg.duration_s) * 1e9)
        # where the process's threads may run, halfway through (every executor spinning)
        thread_cpus: dict[str, int] = {}
        snap = threading.Timer(max(0.0, (start + end) / 2e9 - time.monotonic()),
                               lambda: thread_cpus.update(common.thread_cpus()))
        snap.daemon = True
        snap.start()
        # (the shared MT PicasExecutor: one thread per 4ST executor's core)
        spinning = ([(n, executors["MT"]) for n in cfg.executors] if cfg.shared_mt
                    else list(executors.items()))
        if len(spinning) == 1:
            _spin(cfg, g, *spinning[0], cpus, end, rt_notes)
        else:  # MT with PicasExecutors: one thread each
            spinners = [threading.Thread(target=_spin, args=(cfg, g, n, e, cpus, end, rt_notes),
                                         name=f"picas-{n}", daemon=True)
                        for n, e in spinning]
            for t in spinners:
                t.start()
            for t in spinners:
                t.join()
    snap.cancel()
    # Wait for callbacks still in flight before reading their records or closing their clients:
    # rclpy's MultiThreadedExecutor.spin_once hands a callback to its thread pool and returns,
    # so the loop above can end while one still runs.
    for name, ex in executors.items():
        if not drain_and_shut_down(ex, timeout_s=30):
            print(f"case study 2: executor {name} still had a callback running 30 s after the "
                  "run; its records may miss it", file=sys.stderr, flush=True)
    for t in g.timers:
        t.cancel()
    records.ProcessRecord(
        hot=g.hot.array(), bp_starts=np.asarray(g.bp_starts, dtype=np.int64),
        published=np.asarray([g.published["FrontLidarDriver"],
                              g.published["RearLidarDriver"]], dtype=np.int64),
        excess=np.asarray(g.excess, dtype=np.float64), sub_drops=dict(g.sub_drops),
        gpu_wall=np.asarray(g.gpu_wall, dtype=np.float64), gpu_stages=g.gpu_stages.array(),
        rt=[f"{k}: {v}" for k, v in sorted(rt_notes.items())], thread_cpus=thread_cpus,
        gc_ns=gc_pauses.array(), hot_calls=g.hot_executor_calls.array(),
        switch_interval=sys.getswitchinterval(),
        mt_calls=(g.mt_calls.array() if g.mt_calls is not None
                  else np.zeros((0, threads.CALL_COLS), dtype=np.int64))).save(path)
    for c in g.clients:
        c.close()
    for n in g.nodes.values():
        n.destroy_node()
    rclpy.shutdown(context=ctx)
