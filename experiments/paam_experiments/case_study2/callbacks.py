"""One executor process's graph: its nodes' clients, callbacks and what they record.

:class:`ProcessGraph` holds what the nodes of one process share: the paam clients of their
callbacks (the number cruncher's burn, the GPU and TPU segments), the wrapper rclpy gets for
each callback (which notes when the hot path's executor ran it), the publishers, subscriptions
and timers at their PiCAS priorities, and the records (:mod:`.records`). :mod:`.nodes` builds
the nodes on it.
"""
from __future__ import annotations

import itertools
import threading
import time
import zlib

from paam_experiments import common
from paam_experiments.common.cpus import at_normal_priority
from paam_experiments.case_study2 import graph, records, threads
from paam_experiments.case_study2.config import ProcessConfig


class ProcessGraph:
    """The nodes of one process, their clients and what they record."""

    def __init__(self, cfg: ProcessConfig, ctx) -> None:
        import rclpy
        from rclpy.clock import Clock, ClockType
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import Int64MultiArray

        import paam
        from paam.ros import lean
        self.cfg = cfg
        self.lean = lean  # (every method's nodes and topics lean: paam.ros.lean says why)
        self.paam = paam
        self.msg_t = Int64MultiArray
        self.qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                              reliability=ReliabilityPolicy.RELIABLE)
        self.steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.scale = cfg.scale
        self.method = cfg.method
        # Direct kernels on the CPU backend run on this thread: drop its OS priority for them.
        self.drop_gpu = cfg.drops_gpu_priority()
        self.drop_tpu = cfg.drops_tpu_priority()
        self.clients: list = []
        self.timers: list = []
        self.record_from = [1 << 62]
        # one row per instance, the records.HOT_COLS columns
        self.hot = records.Rows(records.HOT_COLS)
        self.bp_starts: list[int] = []
        self.published = {n: 0 for n in ("FrontLidarDriver", "RearLidarDriver")}
        # per lidar: sample sequence number -> the time its timer was due (ns), from the timer
        # itself (the stamps are the callbacks' starts, as in the reference system)
        self.lidar_due: dict[str, dict[int, int]] = {n: {} for n in self.published}
        # recorded missing samples per subscription, "Node<-topic" (sequence gaps, as counted
        # into the samples' histories)
        self.sub_drops: dict[str, int] = {}
        self.excess: list[float] = []
        # per recorded GPU segment: wall time of the request on the executor's thread (ms), and
        # under PAAM paamd's stage timestamps (ns): submitted, dequeued, device start/end,
        # completed, woken
        self.gpu_wall: list[float] = []
        self.gpu_stages = records.Rows(1 + len(records.STAGES))
        self.nodes: dict[str, object] = {}
        self.entities: dict[str, list[tuple[object, int]]] = {}  # executor -> (entity, prio)
        self.rclpy = rclpy
        self.ctx = ctx
        self.prefix = cfg.topic_prefix
        # (direct invocation runs the kernel on the calling thread, and a CUDA one spins there
        # until it is done: PiCAS and ROS 2 keep synchronous segments)
        self.async_segments = cfg.segments == "async" and self.method == "paam"
        # Every callback of the hot path's executor (E0) with synchronous segments, where one
        # thread runs them one at a time: (start, end, chain priority, then the thread's time on
        # a CPU and runnable-but-waiting at its start and at its end, then the CPU time the
        # callback spent in the burn, then --cpu-probe's two times just before it, -1 without),
        # ns. Not in ROS 2's MT or the shared MT PicasExecutor, whose four threads share E0's
        # callbacks.
        self.hot_executor_calls = records.Rows(records.CALL_COLS)
        self.sched = common.ThreadSchedStat()
        self.tally = ThreadTally()
        self.hot_executor = (None if cfg.shared_mt or (
            self.method == "ros2" and cfg.setup == "MT") else graph.HOT_EXECUTOR)
        # MT with one pool of threads (the shared PicasExecutor, ROS 2's MT), synchronous
        # segments: every callback, on whichever thread ran it (threads.CALL_COLS)
        self.mt_calls = (records.Rows(threads.CALL_COLS)
                         if self.hot_executor is None and not self.async_segments else None)
        # (threads without an index in mt_calls, ROS 2's pool, are numbered from here as they
        # first run a callback)
        self._more_threads = itertools.count(len(cfg.executors))

    def _callback(self, fn, executor: str, node: str, index: int = 0):
        """``fn``, an ``async def`` callback, as rclpy gets it: itself with --segments async;
        else a plain function that runs it to its end at once (its segments never suspend it),
        on the hot path's executor noting when it ran (:attr:`hot_executor_calls`)."""
        if self.async_segments:
            return fn
        calls = self.hot_executor_calls if executor == self.hot_executor else None
        mt = self.mt_calls
        prio = graph.callback_priority(node, index)[0]
        node_id = graph.NODE_IDS[node]
        sched, tally = self.sched.read, self.tally
        probe = cpu_probe if self.cfg.cpu_probe else (lambda: (-1, -1))

        def call(*args) -> None:
            if calls is not None or mt is not None:  # (the record's counters at the start)
                pr = probe() if calls is not None else None
                s0 = sched()
                b0 = (tally.burn, tally.seg_wall, tally.seg_cpu, tally.seg_runq)
            t0 = time.monotonic_ns()
            coro = fn(*args)
            try:
                coro.send(None)
            except StopIteration:
                if t0 >= self.record_from[0] - records.CALLS_BEFORE_NS:
                    if calls is not None:
                        t1 = time.monotonic_ns()
                        calls.append((t0, t1, prio, *s0, *sched(),
                                      tally.burn - b0[0], *pr))
                    elif mt is not None:
                        t1 = time.monotonic_ns()
                        if tally.ix is None:
                            tally.ix = next(self._more_threads)
                        mt.append((t0, t1, node_id, prio, *s0, *sched(), tally.burn - b0[0],
                                   tally.seg_wall - b0[1], tally.seg_cpu - b0[2],
                                   tally.seg_runq - b0[3], tally.ix))
                return
            coro.close()
            raise RuntimeError(f"{fn.__qualname__} suspended with synchronous segments")
        return call

    # clients ------------------------------------------------------------------------------

    def _crunch_client(self):
        c = self.paam.Client(priority=0, kernels=["spin"], wait="spin", direct=True,
                             direct_backend="cpu", device_cpu=-2)
        self.clients.append(c)
        return c

    def _wait(self, chain_prio: int) -> str:
        """How a PAAM callback of the chain ``chain_prio`` waits for its requests: --hot-wait
        for the hot path's, --wait for the others'."""
        return self.cfg.hot_path_wait if chain_prio == graph.HOT_PRIORITY else self.cfg.wait

    def _gpu_client(self, chain_prio: int, name: str, wait: str):
        cfg = self.cfg
        if self.method == "paam":
            c = self.paam.Client(priority=chain_prio, kernels=["spin"], wait=wait,
                                 socket=cfg.gpu_socket, name=name)
        else:
            c = self.paam.Client(priority=chain_prio, kernels=["spin"], wait="suspend",
                                 direct=True, direct_backend=cfg.backend,
                                 device_cpu=cfg.device_cpu)
        self.clients.append(c)
        return c

    def _tpu_client(self, name: str, wait: str):
        cfg = self.cfg
        if self.method == "paam":
            c = self.paam.Client(priority=graph.CHAIN_PRIORITY[graph.TPU_NODE],
                                 kernels=["spin"], wait=wait, socket=cfg.tpu_socket, name=name)
        else:
            c = self.paam.Client(priority=0, kernels=["spin"], wait="suspend", direct=True,
                                 direct_backend="cpu", device_cpu=cfg.tpu_cpu)
        self.clients.append(c)
        return c

    async def _segment(self, client, ms: float, drop: bool) -> None:
        """One accelerator segment. Synchronous: on this thread, the callback holding its
        executor (the coroutine never suspends). PAAM with --segments async: the request is
        submitted and awaited, the executor free meanwhile for callbacks of this one's priority
        or above (PicasExecutor's awaiting_holds_priority)."""
        if ms <= 0:
            return
        if self.async_segments:
            from paam.ros import await_result
            await await_result(client.submit("spin", duration_ms=ms))
        else:
            self._blocking_segment(client, ms, drop)

    def _blocking_segment(self, client, ms: float, drop: bool) -> None:
        if drop:
            # A direct kernel runs on this thread (pinned to the device core).
            at_normal_priority(lambda: client.request("spin", duration_ms=ms))
        else:
            client.request("spin", duration_ms=ms)

    # the callback body ---------------------------------------------------------------------

    def work_fn(self, node: str, index: int, run_ms: float, gpu: bool):
        chain_prio, _ = graph.callback_priority(node, index)
        # paamd ranks the request by this; paam_stages.csv keeps the chain's own priority
        req_prio = (graph.request_priority(node, index, self.cfg.request_priority)
                    if self.method == "paam" else chain_prio)
        crunch = self._crunch_client()
        wait = self._wait(chain_prio)
        gpu_client = self._gpu_client(req_prio, f"{node}.{index}", wait) if gpu else None
        tpu_client = (self._tpu_client(f"{node}.tpu", wait)
                      if gpu and node == graph.TPU_NODE else None)
        cpu_ms = run_ms * self.scale
        gpu_ms, tpu_ms = self.cfg.gpu_ms, self.cfg.tpu_ms
        tally_segments = self.mt_calls is not None and (gpu_client is not None
                                                          or tpu_client is not None)

        async def work() -> None:
            c0 = time.thread_time_ns()
            crunch.request("spin", duration_ms=cpu_ms)
            c_seg = time.thread_time_ns()
            tally = self.tally
            tally.burn += c_seg - c0
            if tally_segments:
                w_seg, q_seg = time.monotonic_ns(), self.sched.read()[1]
            if gpu_client is not None:
                g0 = time.monotonic_ns()
                await self._segment(gpu_client, gpu_ms, self.drop_gpu)
                if g0 >= self.record_from[0]:
                    self.gpu_wall.append((time.monotonic_ns() - g0) / 1e6)
                    if self.method == "paam":
                        ts = gpu_client.timestamps("spin")
                        self.gpu_stages.append(
                            (chain_prio,) + tuple(int(ts.get(k, 0)) for k in records.STAGES))
            if tpu_client is not None:
                await self._segment(tpu_client, tpu_ms, self.drop_tpu)
            if tally_segments:
                tally.seg_wall += time.monotonic_ns() - w_seg
                tally.seg_cpu += time.thread_time_ns() - c_seg
                q = self.sched.read()[1]
                tally.seg_runq += q - q_seg if q_seg >= 0 else 0
            if (self.method == "paam" and not self.async_segments
                    and time.monotonic_ns() >= self.record_from[0]):
                # CPU time beyond the burn (rclpy, Python); direct kernels on the CPU backend
                # burn this thread's CPU time, so only the PAAM run can tell. A spinning wait
                # burns it too: then the segments' CPU time is not counted. (Not with async
                # segments: the thread runs other callbacks while this one awaits.)
                now = time.thread_time_ns()
                spun = now - c_seg if wait != "suspend" else 0
                self.excess.append((now - c0 - spun) / 1e6 - cpu_ms)
        return work

    def publisher(self, node, topic: str):
        return node.create_publisher(self.msg_t, f"{self.prefix}/{topic}", self.qos,
                                     **self.lean.lean_publisher_options())

    def subscribe(self, node, topic: str, fn, executor: str, name: str, index: int = 0,
                   group=None) -> None:
        """Subscribe callback ``index`` of node ``name`` (``fn``, see :meth:`_callback`) to
        ``topic``, on ``executor`` at its callback priority."""
        sub = node.create_subscription(self.msg_t, f"{self.prefix}/{topic}",
                                       self._callback(fn, executor, name, index), self.qos,
                                       callback_group=group,
                                       **self.lean.lean_subscription_options())
        self._add(executor, sub, name, index)

    def timer(self, node, period_ms: float, fn, executor: str, name: str):
        """Node ``name``'s timer (``fn``, see :meth:`_callback`), not started, on ``executor``
        at its callback priority."""
        t = node.create_timer(period_ms / 1e3, self._callback(fn, executor, name),
                              clock=self.steady, autostart=False)
        self.timers.append(t)
        self._add(executor, t, name)
        return t

    def _add(self, executor: str, entity, node: str, index: int = 0) -> None:
        self.entities.setdefault(executor, []).append(
            (entity, graph.callback_priority(node, index)[1]))


class ThreadTally(threading.local):
    """Per thread, so far: ``burn``, ns of CPU its callbacks spent in the number cruncher's burn
    (the rest of a callback's CPU time is Python's and rclpy's, a fixed amount of work); with
    ``ProcessGraph.mt_calls``, ``seg_wall``, ``seg_cpu`` and ``seg_runq``, ns of wall time, of
    CPU time and of waiting for a CPU in accelerator requests, and ``ix``, the thread's index
    there (a shared executor thread's is its executor's, which the executor's spin sets; None
    until given one)."""
    burn = seg_wall = seg_cpu = seg_runq = 0
    ix: int | None = None


# --cpu-probe: fixed work on E0's thread before each of its callbacks, timed by the wall clock.
# The same work taking longer means the CPU ran slower for that thread (a busy sibling
# hyperthread or cache on the host, its clock), not that the executor did more.
_PROBE_BYTES = bytes(range(256)) * 64  # 16 KiB for zlib's CRC: C code, no allocation


def _probe_py() -> int:
    """A fixed loop of Python bytecode (the kind of work the executor does)."""
    x = 0
    for i in range(256):
        x ^= i * 3
    return x


def cpu_probe() -> tuple[int, int]:
    """ns of wall time of the C probe (CRC of 16 KiB) and of the Python one, back to back."""
    t0 = time.perf_counter_ns()
    zlib.crc32(_PROBE_BYTES)
    t1 = time.perf_counter_ns()
    _probe_py()
    return t1 - t0, time.perf_counter_ns() - t1
