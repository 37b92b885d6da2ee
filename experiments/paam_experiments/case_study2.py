"""``paam eval case-study-2``: the PAAM paper's case study 2 (Sec. V-B, Fig. 11), the Autoware
reference system (ros-realtime/reference-system, ``autoware_reference_system``) rebuilt in rclpy.

The graph is the reference system's 24 nodes with its node types and wiring: six sensors
(timers: front/rear lidar 100 ms, PointCloudMap 120, Visualizer 60, Lanelet2Map 100,
EuclideanClusterSettings 25), nine transforms, five fusions (publish once both inputs have
arrived, then clear), the cyclic BehaviorPlanner (a 100 ms timer fusing the latest of its six
inputs), the intersection node EuclideanClusterDetector (two input -> output connections) and
two command sinks. Every topic is KEEP_LAST(1). Each callback burns the reference system's
run time for it (``run_ms`` in ``SYSTEM``: the number cruncher's time, burned as thread CPU time
by a direct-mode ``spin`` kernel, so it releases the GIL) and then runs a GPU segment (the ``spin``
kernel, ``--gpu-ms``), except the BehaviorPlanner's seven callbacks (as in the paper). The rear
points transformer also runs a segment on a second accelerator, ``--tpu-ms``: the Coral TPU's
stand-in, a CPU-backend device with one non-preemptive context on its own core.

Messages (``std_msgs/Int64MultiArray``) carry the reference system's sample history: for every
node the sample went through, its publish time, sequence number and the input samples it found
missing (sequence-number gaps, the reference system's "dropped samples"). KPIs as the
reference system computes them:

* hot-path latency: end of ObjectCollisionEstimator's callback - the later of the two lidar
  stamps in its sample (hot path: Front/Rear lidar -> PointsTransformerFront/Rear ->
  PointCloudFusion -> RayGroundFilter -> EuclideanClusterDetector -> ObjectCollisionEstimator);
* hot-path drops: per hot-path instance (sample reaching the estimator), the missing samples
  the hot-path nodes recorded;
* behavior-planner period: time between the starts of consecutive BehaviorPlanner timer
  callbacks (set to 100 ms).

Executor setups: ``4ST`` (four executors, one process each, each pinned to its own core; the
whole hot path on executor E0) and ``MT`` (one process over four cores). Methods:

* ``ROS 2``: rclpy's SingleThreadedExecutor (4ST) or MultiThreadedExecutor with 4 threads
  (MT), SCHED_OTHER; direct invocation of both accelerators;
* ``PiCAS``: ``paam.ros.PicasExecutor`` with hot-path callbacks highest, the executors' OS
  priorities (SCHED_FIFO when permitted, else a nice ladder); direct invocation;
* ``PAAM``: the same executors, GPU segments through paamd (one bucket per chain priority) and
  TPU segments through a second paamd with one bucket (one non-preemptive context).

Every method's nodes and topics are lean (``paam.ros.create_lean_node``, no services and no QoS
event handlers): rclpy's executors walk every entity in Python at each wait (paam.ros.lean).

MT for PiCAS and PAAM (``--mt-executor``): ``partitioned`` (the default, every MT run before
the thirty-first session, 2026-11-25) runs one process with four threads, each spinning its
own PicasExecutor over one quarter of the nodes (the 4ST partition) pinned to its core;
``shared`` runs the paper's one multi-threaded executor, ``paam.ros.MultiThreadedPicasExecutor``
with four threads pinned one per core, every thread free to run any callback (the
highest-priority ready one; with ``--mt-hot-threads K`` the first K of them, E0's core first,
run only the hot path's callbacks, a priority floor, so that a hot callback finds a thread not
held by lower work). ROS 2's MT is rclpy's MultiThreadedExecutor over all nodes. All
are one process, so their Python work shares one GIL (rclpy's, not the reference system's
C++). The summary says which executor each run used. Where one pool of threads runs every
callback (shared, ROS 2's MT) each callback is on record with its thread, and each hot-path
instance's time is split by what the threads did (``case_study2_threads``). There the
intersection node's two connections, in the node's one mutually exclusive callback group as in
the reference system, hold each other out: ``--intersection-groups connection`` gives each its
own group.

On the CPU backend one core plays the GPU (the last one) and the TPU gets a core of its own
when one is left; the four executor cores (2-5 of the paper's machine) are mapped modulo onto
the cores beside the device core: all onto core 0 on a 2-core machine (then the TPU shares the
GPU's core). ``--scale`` multiplies the run times and segments, not the periods (the KPIs are
relative to the reference system's periods). ``--wait`` sets how PAAM's callbacks wait for
paamd (suspend on a futex by default; direct CUDA invocation spins on a completion flag),
``--server-poll-us`` paamd's busy-poll window, ``--server-pin`` whether paamd's threads are
pinned one per core, ``--dispatcher-priority`` its dispatcher's SCHED_FIFO priority (default:
one above E0's), ``--request-priority`` what paamd ranks a GPU request by (its chain's priority,
the paper's rule and the default, or its executor's most critical chain priority: measured
worse on the H100, docs/evaluation-log.md), ``--hot-lanes N`` that the GPU paamd's most urgent
bucket (the hot path's) runs N kernels at once (paamd's ``--lanes``; default 1, the paper's one
kernel at a time per bucket), ``--segments async`` that PAAM's callbacks await their
requests (the paper's asynchronous request: the executor runs work of the awaiting callback's
priority or above meanwhile; default sync, the callback holding its executor). Counts every
subscription's missing samples (``drops_by_subscription``) and times PAAM's GPU requests per
chain priority, and how late the later lidar's callback started after its timer was due (the
KPI starts at that callback's start, as the reference system's does; ``hot_path_from_due_ms``
adds the lateness). Writes
``hot_path.csv``, ``bp_period.csv``, ``paam_stages.csv`` (paamd's stages of every recorded PAAM
GPU request, with its submit time and chain priority), ``host_stat.csv`` (/proc/stat each
second: what the host, a hypervisor, took from each CPU), ``summary.csv``, ``summary.json``,
``summary.txt``, ``fig11a_hot_path_latency.png``, ``fig11b_bp_period.png``,
``fig11c_drops.png`` and ``fig11d_host_steal.png`` (hot-path latency over time beside the
steal).
"""
from __future__ import annotations

import argparse
import array
import contextlib
import dataclasses
import itertools
import os
import random
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import numpy as np

from paam_experiments import case_study2_threads as threads_bd
from paam_experiments import common
from paam_experiments.overhead import LOCAL_STAGES

SETUPS = ("4ST", "MT")


# -- the reference system -----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class NodeSpec:
    name: str
    kind: str            # sensor | transform | fusion | cyclic | intersection | command
    inputs: tuple = ()   # input topics
    outputs: tuple = ()  # output topics (intersection: one per connection); default: own name
    period_ms: float = 0.0
    run_ms: tuple = ()   # CPU run time per callback kind (see RUN_TIME_MS)


# Run time of each callback (ms), the reference system's number-cruncher work: 0.1 ms for a
# sensor, about 10 ms for a transform, fusion, intersection connection or cyclic node, 2.1 ms for
# a fusion input that only caches its sample, 1 ms for a command sink, 1 µs for the behavior
# planner's input caches. (The upstream timing config states these as number_cruncher limits to
# calibrate per platform; these are the run times of its published cost model.)
SENSOR, TRANSFORM, FUSE, CACHE, COMMAND, BP_CACHE = 0.1, 10.1, 10.0, 2.1, 1.0, 0.001

SYSTEM: tuple[NodeSpec, ...] = (
    NodeSpec("FrontLidarDriver", "sensor", period_ms=100, run_ms=(SENSOR,)),
    NodeSpec("RearLidarDriver", "sensor", period_ms=100, run_ms=(SENSOR,)),
    NodeSpec("PointCloudMap", "sensor", period_ms=120, run_ms=(SENSOR,)),
    NodeSpec("Visualizer", "sensor", period_ms=60, run_ms=(SENSOR,)),
    NodeSpec("Lanelet2Map", "sensor", period_ms=100, run_ms=(SENSOR,)),
    NodeSpec("EuclideanClusterSettings", "sensor", period_ms=25, run_ms=(SENSOR,)),
    NodeSpec("PointsTransformerFront", "transform", ("FrontLidarDriver",), run_ms=(TRANSFORM,)),
    NodeSpec("PointsTransformerRear", "transform", ("RearLidarDriver",), run_ms=(TRANSFORM,)),
    NodeSpec("VoxelGridDownsampler", "transform", ("PointCloudFusion",), run_ms=(TRANSFORM,)),
    NodeSpec("PointCloudMapLoader", "transform", ("PointCloudMap",), run_ms=(TRANSFORM,)),
    NodeSpec("RayGroundFilter", "transform", ("PointCloudFusion",), run_ms=(TRANSFORM,)),
    NodeSpec("ObjectCollisionEstimator", "transform", ("EuclideanClusterDetector",),
             run_ms=(TRANSFORM,)),
    NodeSpec("MPCController", "transform", ("BehaviorPlanner",), run_ms=(TRANSFORM,)),
    NodeSpec("ParkingPlanner", "transform", ("Lanelet2MapLoader",), run_ms=(TRANSFORM,)),
    NodeSpec("LanePlanner", "transform", ("Lanelet2MapLoader",), run_ms=(TRANSFORM,)),
    NodeSpec("PointCloudFusion", "fusion", ("PointsTransformerFront", "PointsTransformerRear"),
             run_ms=(FUSE, CACHE)),
    NodeSpec("NDTLocalizer", "fusion", ("VoxelGridDownsampler", "PointCloudMapLoader"),
             run_ms=(10.1, CACHE)),
    NodeSpec("VehicleInterface", "fusion", ("MPCController", "BehaviorPlanner"),
             run_ms=(10.1, CACHE)),
    NodeSpec("Lanelet2GlobalPlanner", "fusion", ("Visualizer", "NDTLocalizer"),
             run_ms=(10.2, CACHE)),
    NodeSpec("Lanelet2MapLoader", "fusion", ("Lanelet2Map", "Lanelet2GlobalPlanner"),
             run_ms=(10.2, CACHE)),
    NodeSpec("BehaviorPlanner", "cyclic",
             ("ObjectCollisionEstimator", "NDTLocalizer", "Lanelet2GlobalPlanner",
              "Lanelet2MapLoader", "ParkingPlanner", "LanePlanner"),
             period_ms=100, run_ms=(10.1, BP_CACHE)),
    NodeSpec("EuclideanClusterDetector", "intersection",
             ("RayGroundFilter", "EuclideanClusterSettings"),
             ("EuclideanClusterDetector", "EuclideanIntersection"), run_ms=(10.1, 10.2)),
    NodeSpec("VehicleDBWSystem", "command", ("VehicleInterface",), run_ms=(COMMAND,)),
    NodeSpec("IntersectionOutput", "command", ("EuclideanIntersection",), run_ms=(COMMAND,)),
)
NODE_IDS = {n.name: i for i, n in enumerate(SYSTEM)}
BY_NAME = {n.name: n for n in SYSTEM}
HOT_PATH = ("FrontLidarDriver", "RearLidarDriver", "PointsTransformerFront",
            "PointsTransformerRear", "PointCloudFusion", "RayGroundFilter",
            "EuclideanClusterDetector", "ObjectCollisionEstimator")
HOT_IDS = frozenset(NODE_IDS[n] for n in HOT_PATH)
# hot-path callbacks between the lidars and the estimator, whose ends hot_path.csv records
HOT_HOPS = ("PointsTransformerFront", "PointsTransformerRear", "PointCloudFusion",
            "RayGroundFilter", "EuclideanClusterDetector")
# end, latency, missing, 2 seqs, estimator start, lidar gap, timers' phase, later lidar's lateness,
# then the hops, then 1 where the front lidar's callback started later (0: the rear's)
_HOT_COLS = 10 + len(HOT_HOPS)
_NO_STAMP = -(1 << 62)  # a hop the sample's history does not hold
_HOT_EXECUTOR = "E0"
# the hot path executor's callbacks are noted from this long before the recording starts: the
# first recorded instances' timers were due up to a period or two before it
_CALLS_BEFORE_NS = 1_000_000_000
TPU_NODE = "PointsTransformerRear"
# paamd's per-request timestamps (paam.Client.timestamps), in order: the ends of the stages
# the overhead experiment names
_STAGES = (LOCAL_STAGES[0][1],) + tuple(end for _name, _start, end in LOCAL_STAGES)
NO_ACCELERATOR = ("BehaviorPlanner",)

# Chain priorities (larger is more critical): the hot path first, then the behavior planner's
# control chain, localization, planning, visualization, the cluster settings.
CHAIN_PRIORITY = {
    **{n: 100 for n in HOT_PATH},
    "BehaviorPlanner": 90, "MPCController": 90, "VehicleInterface": 90, "VehicleDBWSystem": 90,
    "PointCloudMap": 70, "PointCloudMapLoader": 70, "VoxelGridDownsampler": 70,
    "NDTLocalizer": 70,
    "Lanelet2Map": 60, "Lanelet2MapLoader": 60, "ParkingPlanner": 60, "LanePlanner": 60,
    "Visualizer": 50, "Lanelet2GlobalPlanner": 50,
    "EuclideanClusterSettings": 40, "IntersectionOutput": 40,
}
# The intersection node's second connection belongs to the cluster-settings chain.
CONNECTION_PRIORITY = {("EuclideanClusterDetector", 1): 40}
HOT_PRIORITY = CHAIN_PRIORITY["FrontLidarDriver"]
SETTINGS_PRIORITY = CONNECTION_PRIORITY[("EuclideanClusterDetector", 1)]

# 4ST: (name, CPU of the paper's machine, OS priority, nodes); the hot path together on E0.
EXECUTORS = (
    ("E0", 2, 90, ("FrontLidarDriver", "RearLidarDriver", "PointsTransformerFront",
                   "PointsTransformerRear", "PointCloudFusion", "RayGroundFilter",
                   "EuclideanClusterDetector", "ObjectCollisionEstimator")),
    ("E1", 3, 85, ("BehaviorPlanner", "MPCController", "VehicleInterface", "VehicleDBWSystem",
                   "Lanelet2Map", "Lanelet2MapLoader", "ParkingPlanner", "LanePlanner")),
    ("E2", 4, 80, ("PointCloudMap", "PointCloudMapLoader", "VoxelGridDownsampler",
                   "NDTLocalizer")),
    ("E3", 5, 75, ("Visualizer", "Lanelet2GlobalPlanner", "EuclideanClusterSettings",
                   "IntersectionOutput")),
)


def executor_ceiling(node: str) -> int:
    """The most critical chain priority among the callbacks of ``node``'s executor (the 4ST
    partition, which MT's PicasExecutors share): what ``--request-priority executor`` gives
    every GPU request made on that executor."""
    for _name, _cpu, _prio, nodes in EXECUTORS:
        if node in nodes:
            return max(callback_priority(n, i)[0] for n in nodes
                       for i in range(len(BY_NAME[n].run_ms)))
    raise KeyError(node)


def request_priority(node: str, index: int, mode: str) -> int:
    """The priority a PAAM GPU request of callback ``index`` of ``node`` carries to paamd under
    ``--request-priority mode``."""
    if mode == "chain":
        return callback_priority(node, index)[0]
    if mode == "executor":
        return executor_ceiling(node)
    raise ValueError(f"request priority mode {mode!r}: expected chain or executor")


def _producer(topic: str) -> str:
    for n in SYSTEM:
        if topic in (n.outputs or (n.name,)):
            return n.name
    raise KeyError(topic)


def depths() -> dict[str, int]:
    """Longest path (in nodes) from a timer to each node: PiCAS's "later stage wins" order."""
    d = {n.name: 0 for n in SYSTEM if n.kind in ("sensor", "cyclic")}
    for _ in range(len(SYSTEM)):
        for n in SYSTEM:
            if n.kind in ("sensor", "cyclic"):
                continue
            ins = [d.get(_producer(t)) for t in n.inputs]
            ins = [x for x in ins if x is not None]
            if ins:
                d[n.name] = max(d.get(n.name, 0), max(ins) + 1)
    return d


def callback_priority(node: str, index: int = 0) -> tuple[int, int]:
    """(chain priority, PiCAS callback priority) of callback ``index`` of ``node``."""
    chain = CONNECTION_PRIORITY.get((node, index), CHAIN_PRIORITY[node])
    return chain, chain * 100 + depths()[node]


def demand(gpu_ms: float, tpu_ms: float, scale: float) -> dict:
    """Rates of every callback from the periods, and the CPU and device time they ask for per
    second (ms/s) per 4ST executor and accelerator."""
    rate: dict[str, float] = {}   # output topic -> samples/s
    for n in SYSTEM:
        if n.kind == "sensor" or n.kind == "cyclic":
            rate[n.name] = 1e3 / n.period_ms
    calls: dict[str, list[tuple[float, float, bool]]] = {}  # node -> (calls/s, run ms, gpu)
    for _ in range(len(SYSTEM)):
        for n in SYSTEM:
            if n.kind == "sensor":
                calls[n.name] = [(rate[n.name], n.run_ms[0], True)]
            elif n.kind == "transform" and n.inputs[0] in rate:
                rate[n.name] = rate[n.inputs[0]]
                calls[n.name] = [(rate[n.name], n.run_ms[0], True)]
            elif n.kind == "fusion" and all(t in rate for t in n.inputs):
                r0, r1 = (rate[t] for t in n.inputs)
                rate[n.name] = min(r0, r1)
                calls[n.name] = [(min(r0, r1), n.run_ms[0], True),
                                 (r0 + r1 - min(r0, r1), n.run_ms[1], True)]
            elif n.kind == "cyclic" and all(t in rate for t in n.inputs):
                calls[n.name] = [(rate[n.name], n.run_ms[0], False),
                                 (sum(rate[t] for t in n.inputs), n.run_ms[1], False)]
            elif n.kind == "intersection" and all(t in rate for t in n.inputs):
                for t_in, t_out in zip(n.inputs, n.outputs):
                    rate[t_out] = rate[t_in]
                calls[n.name] = [(rate[t], ms, True) for t, ms in zip(n.inputs, n.run_ms)]
            elif n.kind == "command" and n.inputs[0] in rate:
                calls[n.name] = [(rate[n.inputs[0]], n.run_ms[0], True)]
    out = {"executors": {}, "gpu_ms_per_s": 0.0, "tpu_ms_per_s": 0.0}
    for ex, _cpu, _prio, nodes in EXECUTORS:
        cpu = sum(r * ms for nn in nodes for r, ms, _g in calls[nn]) * scale
        gpu = sum(r * gpu_ms for nn in nodes for r, _ms, g in calls[nn] if g)
        out["executors"][ex] = {"cpu_ms_per_s": cpu, "gpu_ms_per_s": gpu}
        out["gpu_ms_per_s"] += gpu
    out["tpu_ms_per_s"] = rate["RearLidarDriver"] * tpu_ms
    out["callbacks_per_s"] = sum(r for v in calls.values() for r, _m, _g in v)
    return out


# -- the analysis' view of the 4ST hot path ------------------------------------------------------

HOT_CHAIN, SETTINGS_CHAIN = "hot_path", "cluster_settings"
# The hot path's callbacks on E0 in the analysis' one chain: (node, callback index). Both lidar
# timers are due at the same instant (same period, started together), an instance ends when the
# estimator does, and E0 runs one callback at a time, so every one of the nine callbacks' work
# lies between the timers' due time and that end, whatever the order the two branches take.
HOT_CALLBACKS = (("FrontLidarDriver", 0), ("RearLidarDriver", 0),
                 ("PointsTransformerFront", 0), ("PointsTransformerRear", 0),
                 ("PointCloudFusion", 1), ("PointCloudFusion", 0), ("RayGroundFilter", 0),
                 ("EuclideanClusterDetector", 0), ("ObjectCollisionEstimator", 0))


def analysis_spec(gpu_ms: float, tpu_ms: float, scale: float, executor_cpus: dict,
                  buckets: int, epsilon: float, kappa: float, extra_cpu_ms: float = 0.0,
                  blocker_request_ms: float = 0.0):
    """The 4ST system as ``paam analyze`` sees the hot path (a SystemSpec; times in ms).

    Two chains reach E0: the hot path (priority 100, period 100 ms: :data:`HOT_CALLBACKS`, each
    with its GPU segment, the rear transformer also its TPU segment) and the cluster-settings
    chain (priority 40, period 25 ms: its sensor and sink on E3, the intersection node's
    settings connection on E0), whose E0 callback is the hot path's blocking term; it is marked
    best-effort (E0 is over-full by design and starves it). The other chains share the GPU from
    lower buckets only, which the analysis charges to kappa, and run on other executors, so
    they change nothing in the hot path's bound and are left out. ``extra_cpu_ms`` is added to
    every callback's CPU time (the executor's and Python's own cost); ``blocker_request_ms`` to
    the settings connection's CPU time on E0: its synchronous GPU request, which holds E0 for as
    long as it takes (lower buckets wait behind every other executor's requests, which this
    spec leaves out, so the caller measures it)."""
    from paam.analysis.model import Accelerator, Callback, Chain, Executor, Segment, SystemSpec

    def cb(node: str, index: int, executor: str, more_ms: float = 0.0):
        segs = [Segment("gpu0", gpu_ms * scale)]
        if node == TPU_NODE:
            segs.append(Segment("tpu0", tpu_ms * scale))
        return Callback(name=f"{node}.{index}", executor=executor,
                        wcet=BY_NAME[node].run_ms[index] * scale + extra_cpu_ms + more_ms,
                        segments=segs)

    ex_of = {n: e[0] for e in EXECUTORS for n in e[3]}
    return SystemSpec(
        accelerators={"gpu0": Accelerator("gpu0", buckets=buckets, overhead=epsilon,
                                          preemption=kappa),
                      "tpu0": Accelerator("tpu0", buckets=1, overhead=epsilon)},
        executors={e[0]: Executor(e[0], cpu=executor_cpus[e[0]], priority=e[2])
                   for e in EXECUTORS},
        chains=[Chain(HOT_CHAIN, HOT_PRIORITY, BY_NAME["FrontLidarDriver"].period_ms,
                      [cb(n, i, _HOT_EXECUTOR) for n, i in HOT_CALLBACKS]),
                Chain(SETTINGS_CHAIN, SETTINGS_PRIORITY,
                      BY_NAME["EuclideanClusterSettings"].period_ms,
                      [cb("EuclideanClusterSettings", 0, ex_of["EuclideanClusterSettings"]),
                       cb("EuclideanClusterDetector", 1, _HOT_EXECUTOR, blocker_request_ms),
                       cb("IntersectionOutput", 0, ex_of["IntersectionOutput"])],
                      best_effort=True)])


def hot_path_bound(spec) -> dict:
    """The hot path's bound in ``spec`` (ms, from the lidar timers' due time) and its parts;
    the blocking term is the lower callback's CPU time (ANALYSIS.md as written)."""
    from paam.analysis.bounds import analyze
    c = analyze(spec, stop_at_deadline=False).chain(HOT_CHAIN)
    return {"bound_ms": c.wcrt, "schedulable": c.schedulable, "blocking_ms": c.blocking,
            "cpu_ms": c.own_cpu, "accelerators_ms": c.handling,
            "period_ms": c.period}


# -- messages: the sample history -----------------------------------------------------------------
# Int64MultiArray.data = [node id, stamp ns, seq, missing] * entries; one entry per node the
# sample went through (the latest when two inputs share one).

def _parse(data) -> dict[int, tuple[int, int, int]]:
    a = np.asarray(data, dtype=np.int64).reshape(-1, 4)
    return {int(r[0]): (int(r[1]), int(r[2]), int(r[3])) for r in a}


def _pack(hist: dict[int, tuple[int, int, int]]) -> list[int]:
    out: list[int] = []
    for k, (stamp, seq, miss) in hist.items():
        out += (k, stamp, seq, miss)
    return out


def _merge(into: dict, other: dict) -> None:
    for k, v in other.items():
        if k not in into or v[0] > into[k][0]:
            into[k] = v


# -- one executor process -----------------------------------------------------------------------


def executor_main(cfg: dict, path: str, sync: dict) -> None:
    import warnings
    warnings.filterwarnings("ignore", message="coroutine .* was never awaited")
    try:
        if cfg["e0_executor"] == "cpp" and list(cfg["executors"]) == [_HOT_EXECUTOR]:
            from paam_experiments import case_study2_cpp
            case_study2_cpp.run(cfg, path, sync)
        else:
            _executor(cfg, path, sync)
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        sync["ready"].put("failed")
        common.child_failed(path, exc)


class _Graph:
    """The nodes of one process, their clients and what they record."""

    def __init__(self, cfg: dict, ctx) -> None:
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
        self.scale = cfg["scale"]
        self.method = cfg["method"]
        # Direct kernels on the CPU backend run on this thread: drop its OS priority for them.
        self.drop_gpu = (self.method != "paam" and cfg["backend"] == "cpu"
                         and not cfg["direct_keeps_priority"])
        self.drop_tpu = self.method != "paam" and not cfg["direct_keeps_priority"]
        self.clients: list = []
        self.timers: list = []
        self.record_from = [1 << 62]
        # one row per instance, the _HOT_COLS columns
        self.hot = _Rows(_HOT_COLS)
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
        self.gpu_stages = _Rows(1 + len(_STAGES))
        self.nodes: dict[str, object] = {}
        self.entities: dict[str, list[tuple[object, int]]] = {}  # executor -> (entity, prio)
        self.rclpy = rclpy
        self.ctx = ctx
        self.prefix = cfg["topic_prefix"]
        # (direct invocation runs the kernel on the calling thread, and a CUDA one spins there
        # until it is done: PiCAS and ROS 2 keep synchronous segments)
        self.async_segments = cfg["segments"] == "async" and self.method == "paam"
        # Every callback of the hot path's executor (E0) with synchronous segments, where one
        # thread runs them one at a time: (start, end, chain priority, then the thread's time on
        # a CPU and runnable-but-waiting at its start and at its end, then the CPU time the
        # callback spent in the burn, then --cpu-probe's two times just before it, -1 without),
        # ns. Not in ROS 2's MT or the shared MT PicasExecutor, whose four threads share E0's
        # callbacks.
        self.hot_executor_calls = _Rows(_CALL_COLS)
        self.sched = common.ThreadSchedStat()
        self.tally = _ThreadTally()
        self.hot_executor = (None if cfg["shared_mt"] or (
            self.method == "ros2" and cfg["setup"] == "MT") else _HOT_EXECUTOR)
        # MT with one pool of threads (the shared PicasExecutor, ROS 2's MT), synchronous
        # segments: every callback, on whichever thread ran it (case_study2_threads.CALL_COLS)
        self.mt_calls = (_Rows(threads_bd.CALL_COLS)
                         if self.hot_executor is None and not self.async_segments else None)
        # (threads without an index in mt_calls, ROS 2's pool, are numbered from here as they
        # first run a callback)
        self._more_threads = itertools.count(len(cfg["executors"]))

    def _callback(self, fn, executor: str, node: str, index: int = 0):
        """``fn``, an ``async def`` callback, as rclpy gets it: itself with --segments async;
        else a plain function that runs it to its end at once (its segments never suspend it),
        on the hot path's executor noting when it ran (:attr:`hot_executor_calls`)."""
        if self.async_segments:
            return fn
        calls = self.hot_executor_calls if executor == self.hot_executor else None
        mt = self.mt_calls
        prio = callback_priority(node, index)[0]
        node_id = NODE_IDS[node]
        sched, tally = self.sched.read, self.tally
        probe = _cpu_probe if self.cfg["cpu_probe"] else (lambda: (-1, -1))

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
                if t0 >= self.record_from[0] - _CALLS_BEFORE_NS:
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
        return self.cfg["hot_wait"] if chain_prio == HOT_PRIORITY else self.cfg["wait"]

    def _gpu_client(self, chain_prio: int, name: str, wait: str):
        cfg = self.cfg
        if self.method == "paam":
            c = self.paam.Client(priority=chain_prio, kernels=["spin"], wait=wait,
                                 socket=cfg["gpu_socket"], name=name)
        else:
            c = self.paam.Client(priority=chain_prio, kernels=["spin"], wait="suspend",
                                 direct=True, direct_backend=cfg["backend"],
                                 device_cpu=cfg["device_cpu"])
        self.clients.append(c)
        return c

    def _tpu_client(self, name: str, wait: str):
        cfg = self.cfg
        if self.method == "paam":
            c = self.paam.Client(priority=CHAIN_PRIORITY[TPU_NODE], kernels=["spin"],
                                 wait=wait, socket=cfg["tpu_socket"], name=name)
        else:
            c = self.paam.Client(priority=0, kernels=["spin"], wait="suspend", direct=True,
                                 direct_backend="cpu", device_cpu=cfg["tpu_cpu"])
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
            # A direct kernel runs on this thread (pinned to the device core): at SCHED_OTHER
            # nice 0, as a GPU time-slices contexts whatever their CPU priority.
            saved = (os.sched_getscheduler(0), os.sched_getparam(0),
                     os.getpriority(os.PRIO_PROCESS, 0))
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

    # the callback body ---------------------------------------------------------------------

    def _work_fn(self, node: str, index: int, run_ms: float, gpu: bool):
        chain_prio, _ = callback_priority(node, index)
        # paamd ranks the request by this; paam_stages.csv keeps the chain's own priority
        req_prio = (request_priority(node, index, self.cfg["request_priority"])
                    if self.method == "paam" else chain_prio)
        crunch = self._crunch_client()
        wait = self._wait(chain_prio)
        gpu_client = self._gpu_client(req_prio, f"{node}.{index}", wait) if gpu else None
        tpu_client = (self._tpu_client(f"{node}.tpu", wait) if (gpu and node == TPU_NODE)
                      else None)
        cpu_ms = run_ms * self.scale
        gpu_ms, tpu_ms = self.cfg["gpu_ms"], self.cfg["tpu_ms"]
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
                        self.gpu_stages.append((chain_prio,)
                                               + tuple(int(ts.get(k, 0)) for k in _STAGES))
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

    def _pub(self, node, topic: str):
        return node.create_publisher(self.msg_t, f"{self.prefix}/{topic}", self.qos,
                                     **self.lean.lean_publisher_options())

    def _subscribe(self, node, topic: str, fn, executor: str, name: str, index: int = 0,
                   group=None) -> None:
        """Subscribe callback ``index`` of node ``name`` (``fn``, see :meth:`_callback`) to
        ``topic``, on ``executor`` at its callback priority."""
        sub = node.create_subscription(self.msg_t, f"{self.prefix}/{topic}",
                                       self._callback(fn, executor, name, index), self.qos,
                                       callback_group=group,
                                       **self.lean.lean_subscription_options())
        self._add(executor, sub, name, index)

    def _timer(self, node, period_ms: float, fn, executor: str, name: str):
        """Node ``name``'s timer (``fn``, see :meth:`_callback`), not started, on ``executor``
        at its callback priority."""
        t = node.create_timer(period_ms / 1e3, self._callback(fn, executor, name),
                              clock=self.steady, autostart=False)
        self.timers.append(t)
        self._add(executor, t, name)
        return t

    def _send(self, pub, hist) -> None:
        m = self.msg_t()
        m.data = _pack(hist)
        pub.publish(m)

    def _add(self, executor: str, entity, node: str, index: int = 0) -> None:
        self.entities.setdefault(executor, []).append((entity, callback_priority(node, index)[1]))

    # nodes ---------------------------------------------------------------------------------

    def build(self, spec: NodeSpec, executor: str) -> None:
        node = self.lean.create_lean_node(spec.name, context=self.ctx,
                                          namespace=f"cs2_{os.getpid()}")
        self.nodes[spec.name] = node
        me = NODE_IDS[spec.name]
        gpu = spec.name not in NO_ACCELERATOR
        state = {"seq": 0, "last_in": {}, "missing": 0}

        def missing(topic: str, hist) -> int:
            src = NODE_IDS[_producer(topic)]
            seq = hist[src][1] if src in hist else None
            last = state["last_in"].get(topic)
            state["last_in"][topic] = seq
            if seq is None or last is None:
                return 0
            gap = max(0, seq - last - 1)
            if gap and time.monotonic_ns() >= self.record_from[0]:
                key = f"{spec.name}<-{topic}"
                self.sub_drops[key] = self.sub_drops.get(key, 0) + gap
            return gap

        def stamp(hist: dict, miss: int) -> dict:
            state["seq"] += 1
            hist[me] = (time.monotonic_ns(), state["seq"], miss)
            return hist

        if spec.kind == "sensor":
            pub = self._pub(node, spec.name)
            work = self._work_fn(spec.name, 0, spec.run_ms[0], gpu)
            counted = spec.name in self.published

            timer: list = []
            period_ns = int(spec.period_ms * 1e6)

            async def on_timer() -> None:
                t0 = time.monotonic_ns()
                if counted:  # rcl set the next call one period after this one's due time
                    left = timer[0].time_until_next_call()
                    due = t0 + left - period_ns if left is not None else t0
                await work()
                state["seq"] += 1
                self._send(pub, {me: (t0, state["seq"], 0)})
                if counted:
                    dues = self.lidar_due[spec.name]
                    dues[state["seq"]] = due
                    dues.pop(state["seq"] - 50, None)  # a sample older than 5 s fuses no more
                    if t0 >= self.record_from[0]:
                        self.published[spec.name] += 1
            timer.append(self._timer(node, spec.period_ms, on_timer, executor, spec.name))
        elif spec.kind in ("transform", "command"):
            pub = self._pub(node, spec.name) if spec.kind == "transform" else None
            work = self._work_fn(spec.name, 0, spec.run_ms[0], gpu)
            topic = spec.inputs[0]
            is_oce = spec.name == "ObjectCollisionEstimator"

            async def on_msg(msg) -> None:
                t0 = time.monotonic_ns()
                hist = _parse(msg.data)
                miss = missing(topic, hist)
                await work()
                hist = stamp(hist, miss)
                if pub is not None:
                    self._send(pub, hist)
                if is_oce:
                    self._hot(hist, t0)
            self._subscribe(node, topic, on_msg, executor, spec.name)
        elif spec.kind == "fusion":
            pub = self._pub(node, spec.name)
            fuse = self._work_fn(spec.name, 0, spec.run_ms[0], gpu)
            cache_work = [self._work_fn(spec.name, 0, spec.run_ms[1], gpu) for _ in spec.inputs]
            cache: list = [None] * len(spec.inputs)
            for i, topic in enumerate(spec.inputs):
                # (both inputs in the node's one mutually exclusive callback group: with async
                # segments too, one runs at a time on the shared cache)
                async def on_msg(msg, i=i) -> None:
                    cache[i] = _parse(msg.data)
                    if any(c is None for c in cache):
                        await cache_work[i]()
                        return
                    await fuse()
                    # Missing samples as the reference system counts them at a fusion: the
                    # sequence gap of each fused input since its last fusion (a sample
                    # overwritten in the cache counts as dropped).
                    miss = sum(missing(t, c) for t, c in zip(spec.inputs, cache))
                    merged: dict = {}
                    for c in cache:
                        _merge(merged, c)
                    for j in range(len(cache)):
                        cache[j] = None
                    self._send(pub, stamp(merged, miss))
                self._subscribe(node, topic, on_msg, executor, spec.name)
        elif spec.kind == "intersection":
            for i, (t_in, t_out) in enumerate(zip(spec.inputs, spec.outputs)):
                pub = self._pub(node, t_out)
                work = self._work_fn(spec.name, i, spec.run_ms[i], gpu)
                conn = {"seq": 0}

                async def on_msg(msg, t_in=t_in, pub=pub, work=work, conn=conn) -> None:
                    hist = _parse(msg.data)
                    miss = missing(t_in, hist)
                    await work()
                    conn["seq"] += 1
                    hist[me] = (time.monotonic_ns(), conn["seq"], miss)
                    self._send(pub, hist)
                # With async segments or --intersection-groups connection each connection
                # gets a callback group of its own: the settings connection (running, or
                # awaiting its low-priority request) then does not hold the hot-path connection
                # of the same node out where threads could run both (they share no state).
                # Else both are in the node's default group, as in the reference system.
                group = None
                if self.async_segments or self.cfg["intersection_groups"] == "connection":
                    from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
                    group = MutuallyExclusiveCallbackGroup()
                self._subscribe(node, t_in, on_msg, executor, spec.name, i, group)
        elif spec.kind == "cyclic":
            pub = self._pub(node, spec.name)
            work = self._work_fn(spec.name, 0, spec.run_ms[0], gpu)
            cache_work = self._work_fn(spec.name, 1, spec.run_ms[1], gpu)
            cache: dict = {}
            for topic in spec.inputs:
                async def on_msg(msg, topic=topic) -> None:
                    hist = _parse(msg.data)
                    state["missing"] += missing(topic, hist)
                    cache[topic] = hist
                    await cache_work()
                self._subscribe(node, topic, on_msg, executor, spec.name)

            async def on_timer() -> None:
                t0 = time.monotonic_ns()
                if t0 >= self.record_from[0]:
                    self.bp_starts.append(t0)
                await work()
                merged: dict = {}
                for h in cache.values():
                    _merge(merged, h)
                cache.clear()
                miss, state["missing"] = state["missing"], 0
                self._send(pub, stamp(merged, miss))
            self._timer(node, spec.period_ms, on_timer, executor, spec.name)
        else:
            raise ValueError(spec.kind)

    def _hot(self, hist: dict, oce_start: int) -> None:
        end = time.monotonic_ns()
        f, r = hist.get(NODE_IDS["FrontLidarDriver"]), hist.get(NODE_IDS["RearLidarDriver"])
        if f is None or r is None:
            return
        start = max(f[0], r[0])
        if start < self.record_from[0]:
            return
        miss = sum(v[2] for k, v in hist.items() if k in HOT_IDS)
        # (the reference system stamps a node at its callback's start: its hot-path latency
        # ends where the estimator's callback starts; ours at its end)
        hops = tuple(hist[NODE_IDS[n]][0] - start if NODE_IDS[n] in hist else _NO_STAMP
                     for n in HOT_HOPS)
        # the later lidar callback's start after the earlier one's: the timers' phase plus any
        # wait of the later callback for the executor; and, from the timers' due times, the
        # phase alone and how late the later callback started
        gap = start - min(f[0], r[0])
        due_f = self.lidar_due["FrontLidarDriver"].get(f[1])
        due_r = self.lidar_due["RearLidarDriver"].get(r[1])
        if due_f is None or due_r is None:
            phase = late = _NO_STAMP
        else:
            phase = abs(due_f - due_r)
            late = start - (due_f if f[0] >= r[0] else due_r)
        self.hot.append((end, end - start, miss, f[1], r[1], oce_start - start, gap, phase, late)
                        + hops + (int(f[0] >= r[0]),))


class _ThreadTally(threading.local):
    """Per thread, so far: ``burn``, ns of CPU its callbacks spent in the number cruncher's burn
    (the rest of a callback's CPU time is Python's and rclpy's, a fixed amount of work); with
    ``_Graph.mt_calls``, ``seg_wall``, ``seg_cpu`` and ``seg_runq``, ns of wall time, of CPU time
    and of waiting for a CPU in accelerator requests, and ``ix``, the thread's index there (a
    shared executor thread's is its executor's, which spin() sets; None until given one)."""
    burn = seg_wall = seg_cpu = seg_runq = 0
    ix: int | None = None


class _Rows:
    """Rows of ``width`` integers, kept in one flat ``array.array`` of int64. An appended row
    leaves no object behind, so the records add nothing for Python's collector to count or
    scan: kept as a list of tuples, they made E0 run a full collection of 15-23 ms about every
    150 s (one tuple per callback and per GPU request), inside the very instances measured."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._a = array.array("q")

    def append(self, row) -> None:
        if len(row) != self.width:
            raise ValueError(f"a row of {len(row)} values, not {self.width}")
        self._a.extend(row)

    def __len__(self) -> int:
        return len(self._a) // self.width

    def array(self) -> np.ndarray:
        return np.frombuffer(self._a, dtype=np.int64).reshape(-1, self.width).copy()


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


def _cpu_probe() -> tuple[int, int]:
    """ns of wall time of the C probe (CRC of 16 KiB) and of the Python one, back to back."""
    t0 = time.perf_counter_ns()
    zlib.crc32(_PROBE_BYTES)
    t1 = time.perf_counter_ns()
    _probe_py()
    return t1 - t0, time.perf_counter_ns() - t1


def _set_priority(cfg: dict, prio: int, cpu: int) -> str:
    """The calling thread's OS priority for PiCAS/PAAM (SCHED_FIFO, else the nice ladder)."""
    common.pin_this_thread([cpu])
    return f"{common.apply_priority(prio, cfg['rt'])}, CPU {cpu}"


def drain_and_shut_down(ex, timeout_s: float) -> bool:
    """Let rclpy executor ``ex`` finish every callback it has started or queued, then shut it
    down; False if one still ran after ``timeout_s``.

    Jazzy's rclpy (7.1) does not wait in ``Executor.shutdown``: it tests its shutdown flag just
    after setting it, so it returns at once. And a MultiThreadedExecutor may still hold handlers
    queued in its thread pool, which would run after the shutdown against the executor's
    destroyed guard condition or the nodes' destroyed entities ("The following exception was
    never retrieved: cannot use Destroyable because destruction was requested", seventeen times
    at the end of a 10-minute MT / ROS 2 run on the H100, 2026-11-25). So the pool is drained
    first, while the executor and its nodes still exist, through its ``_executor`` (Jazzy has no
    public way; later rclpy adds ``MultiThreadedExecutor.shutdown(wait_for_threads=True)``,
    ros2/rclpy#1309).
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


def _executor(cfg: dict, path: str, sync: dict) -> None:
    cpus = sorted(set(cfg["cpus"].values()))
    if cfg["switch_interval_ms"] is not None:
        sys.setswitchinterval(cfg["switch_interval_ms"] / 1e3)
    # Every thread started from here (DDS's included) on the process's executor cores, or with
    # --dds-cpus spare on the cores no executor uses; each executor thread then pins itself.
    common.pin_this_thread(cfg["helper_cpus"] or cpus)
    if cfg["method"] != "ros2":
        # ... and, for PiCAS and PAAM, at the process's top executor priority: DDS's threads
        # inherit it from this one, as from `chrt`/`nice` on a C++ executor process. (At nice 0
        # beside a nice -20 executor that is busy, DDS's receive thread gets about 1% of the
        # core, and the next hot-path callback waits for its message.) All but DDS's sender
        # thread, which common.dds_threads_rt leaves at SCHED_OTHER (its docstring says why).
        common.apply_rt(max(cfg["priorities"][e] for e in cfg["executors"]), None,
                        mode=cfg["rt"], log=lambda _line: None)
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor

    ctx = Context()
    with common.dds_threads_rt():  # DDS's threads start with the context and the first node
        rclpy.init(context=ctx)
        g = _Graph(cfg, ctx)
        for ex_name, nodes in cfg["executors"].items():
            for n in nodes:
                g.build(BY_NAME[n], ex_name)

    method, setup = cfg["method"], cfg["setup"]
    executors: dict[str, object] = {}
    rt_notes: dict[str, str] = {}
    if method == "ros2" and setup == "MT":
        ex = MultiThreadedExecutor(num_threads=4, context=ctx)
        for node in g.nodes.values():
            ex.add_node(node)
        executors["MT"] = ex
        rt_notes["MT"] = (f"rclpy MultiThreadedExecutor(4 threads), SCHED_OTHER nice 0, CPUs "
                          f"{cpus}")
    elif cfg["shared_mt"]:
        from paam.ros import MultiThreadedPicasExecutor
        # (the hot-path threads' floors: each thread sets its own below, see spin())
        ex = MultiThreadedPicasExecutor(len(cfg["executors"]), context=ctx,
                                        awaiting_holds_priority=g.async_segments,
                                        lean_wait=cfg["executor_wait"] == "own")
        for ex_name, nodes in cfg["executors"].items():  # (the nodes in the 4ST order)
            for entity, prio in g.entities[ex_name]:
                ex.set_callback_priority(entity, prio)
            for n in nodes:
                ex.add_node(g.nodes[n])
        executors["MT"] = ex
    else:
        for ex_name, nodes in cfg["executors"].items():
            if method == "ros2":
                ex = SingleThreadedExecutor(context=ctx)
            else:
                from paam.ros import PicasExecutor
                ex = PicasExecutor(context=ctx, awaiting_holds_priority=g.async_segments,
                                   lean_wait=cfg["executor_wait"] == "own")
                for entity, prio in g.entities[ex_name]:
                    ex.set_callback_priority(entity, prio)
            for n in nodes:
                ex.add_node(g.nodes[n])
            executors[ex_name] = ex

    # Python's collector as --gc says from here on, its pauses recorded
    with common.GcPauses(cfg["gc"]) as gc_pauses:
        start = common.synchronous_start(sync, cfg["name"], g.timers, 180)
        g.record_from[0] = start + int(cfg["warmup_s"] * 1e9)
        end = start + int((cfg["warmup_s"] + cfg["duration_s"]) * 1e9)
        # where the process's threads may run, halfway through (every executor spinning)
        thread_cpus: dict[str, int] = {}
        snap = threading.Timer(max(0.0, (start + end) / 2e9 - time.monotonic()),
                               lambda: thread_cpus.update(common.thread_cpus()))
        snap.daemon = True
        snap.start()

        def spin(ex_name: str, ex) -> None:
            if method == "ros2":
                # (MT: rclpy's MultiThreadedExecutor starts its workers from this thread)
                common.pin_this_thread([cfg["cpus"][ex_name]] if setup == "4ST" else cpus)
                if setup == "4ST":
                    rt_notes[ex_name] = f"SCHED_OTHER nice 0, CPU {cfg['cpus'][ex_name]}"
            elif cfg["shared_mt"]:  # a shared PicasExecutor thread: E<i>'s core, E0's priority
                hot_only = list(cfg["executors"]).index(ex_name) < cfg["mt_hot_threads"]
                g.tally.ix = list(cfg["executors"]).index(ex_name)
                if hot_only:
                    ex.set_thread_floor(HOT_PRIORITY)
                rt_notes[f"MT thread {ex_name}"] = _set_priority(
                    cfg, max(cfg["priorities"].values()), cfg["cpus"][ex_name]) + (
                    f", hot path only (priority floor {HOT_PRIORITY})" if hot_only else "")
            else:
                rt_notes[ex_name] = _set_priority(cfg, cfg["priorities"][ex_name],
                                                  cfg["cpus"][ex_name])
            while time.monotonic_ns() < end:
                ex.spin_once(timeout_sec=0.05)

        # (the shared MT PicasExecutor: one thread per 4ST executor's core)
        spinning = ([(n, executors["MT"]) for n in cfg["executors"]] if cfg["shared_mt"]
                    else list(executors.items()))
        if len(spinning) == 1:
            spin(*spinning[0])
        else:  # MT with PicasExecutors: one thread each
            threads = [threading.Thread(target=spin, args=(n, e), name=f"picas-{n}", daemon=True)
                       for n, e in spinning]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    snap.cancel()
    # Wait for callbacks still in flight before reading their records or closing their clients:
    # rclpy's MultiThreadedExecutor.spin_once hands a callback to its thread pool and returns,
    # so the loop above can end while one still runs. (Closing its GPU client under it
    # corrupted the heap in MT / ROS 2 runs, "malloc_consolidate(): unaligned fastbin chunk",
    # until paam.Client.close learnt to wait for requests in flight.)
    for name, ex in executors.items():
        if not drain_and_shut_down(ex, timeout_s=30):
            print(f"case study 2: executor {name} still had a callback running 30 s after the "
                  "run; its records may miss it", file=sys.stderr, flush=True)
    for t in g.timers:
        t.cancel()
    np.savez(path, hot=g.hot.array(),
             bp_starts=np.asarray(g.bp_starts, dtype=np.int64),
             published=np.asarray([g.published["FrontLidarDriver"],
                                   g.published["RearLidarDriver"]], dtype=np.int64),
             excess=np.asarray(g.excess, dtype=np.float64),
             sub_drop_keys=np.asarray(sorted(g.sub_drops), dtype=str),
             sub_drop_counts=np.asarray([g.sub_drops[k] for k in sorted(g.sub_drops)],
                                        dtype=np.int64),
             gpu_wall=np.asarray(g.gpu_wall, dtype=np.float64),
             gpu_stages=g.gpu_stages.array(),
             rt=np.asarray([f"{k}: {v}" for k, v in sorted(rt_notes.items())]),
             thread_cpu_keys=np.asarray(list(thread_cpus), dtype=str),
             thread_cpu_counts=np.asarray(list(thread_cpus.values()), dtype=np.int64),
             gc_ns=gc_pauses.array(),
             hot_calls=g.hot_executor_calls.array(),
             switch_interval=np.float64(sys.getswitchinterval()),
             mt_calls=(g.mt_calls.array() if g.mt_calls is not None
                       else np.zeros((0, threads_bd.CALL_COLS), dtype=np.int64)))
    for c in g.clients:
        c.close()
    for n in g.nodes.values():
        n.destroy_node()
    rclpy.shutdown(context=ctx)


# -- one setup x method -------------------------------------------------------------------------


def run_one(setup: str, method: str, args, tmp: str, sockets: dict, cpus_map: dict,
            placement: dict, progress: str) -> dict:
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    sync = {"ready": ctx.Queue(), "go": ctx.Event(), "start_at": ctx.Value("d", 0.0)}
    base = {"method": method, "setup": setup, "scale": args.scale, "gpu_ms": args.gpu_ms_eff,
            "tpu_ms": args.tpu_ms_eff, "backend": args.backend,
            "device_cpu": placement["device_cpu"], "tpu_cpu": placement["tpu_cpu"],
            "gpu_socket": sockets.get("gpu"), "tpu_socket": sockets.get("tpu"), "rt": args.rt,
            "direct_keeps_priority": args.direct_keeps_priority,
            "topic_prefix": f"/paam_eval_cs2_{os.getpid()}_{setup}_{method}",
            "wait": args.wait, "hot_wait": args.hot_wait or args.wait,
            "request_priority": args.request_priority,
            "segments": args.segments, "cpu_probe": args.cpu_probe,
            "warmup_s": args.warmup, "duration_s": args.duration, "gc": args.gc,
            "executor_wait": args.executor_wait, "helper_cpus": helper_cpus(placement, args),
            "shared_mt": setup == "MT" and method != "ros2" and args.mt_executor == "shared",
            "mt_hot_threads": args.mt_hot_threads,
            "switch_interval_ms": args.switch_interval_ms,
            "intersection_groups": args.intersection_groups,
            "e0_executor": args.e0_executor,
            "priorities": {e[0]: e[2] for e in EXECUTORS}}
    groups = ([{e[0]: e[3]} for e in EXECUTORS] if setup == "4ST"
              else [{e[0]: e[3] for e in EXECUTORS}])
    procs = []
    for i, exs in enumerate(groups):
        cfg = dict(base, executors=exs, name="+".join(exs),
                   cpus={k: cpus_map[k] for k in exs})
        path = os.path.join(tmp, f"{setup}-{method}-{i}.npz")
        p = ctx.Process(target=executor_main, args=(cfg, path, sync))
        p.start()
        procs.append((p, path, cfg["name"]))
    for _ in procs:
        try:
            sync["ready"].get(timeout=180)
        except Exception:  # noqa: BLE001 - queue.Empty
            break
    with common.HostStat() as host:  # what the host took from the CPUs meanwhile
        start_at = time.monotonic() + 0.5
        sync["start_at"].value = start_at
        sync["go"].set()
        total = args.warmup + args.duration
        finish = start_at + total
        next_note = time.monotonic() + 30
        while any(p.is_alive() for p, _, _ in procs) and time.monotonic() < finish + 120:
            time.sleep(0.5)
            if time.monotonic() >= next_note and time.monotonic() < finish:
                done = time.monotonic() - start_at
                print(f"    {progress}: {done:.0f}/{total:.0f} s", flush=True)
                next_note += 30
        hot, bp, published, excess, rt = [], [], np.zeros(2, dtype=np.int64), [], []
        threads: dict[str, dict[str, int]] = {}
        gpu_wall, gpu_stages, sub_drops, gc_ns, hot_calls, mt_calls = [], [], {}, {}, [], []
        switch_s: list[float] = []
        for p, path, name in procs:
            common.join_child(p, path, f"{setup}/{method}: process {name}",
                              finish + 120 - time.monotonic())
            with np.load(path) as z:
                hot.append(z["hot"])
                if z["bp_starts"].size:
                    bp.append(z["bp_starts"])
                published += z["published"]
                excess.extend(z["excess"].tolist())
                for k, n in zip(z["sub_drop_keys"].tolist(), z["sub_drop_counts"].tolist()):
                    sub_drops[k] = sub_drops.get(k, 0) + int(n)
                if "gpu_wall" in z.files:
                    gpu_wall.extend(z["gpu_wall"].tolist())
                    gpu_stages.append(z["gpu_stages"])
                rt.extend(str(x) for x in z["rt"])
                threads[name] = dict(zip(z["thread_cpu_keys"].tolist(),
                                         map(int, z["thread_cpu_counts"].tolist())))
                gc_ns[name] = z["gc_ns"]
                hot_calls.append(z["hot_calls"])
                if "mt_calls" in z.files and len(z["mt_calls"]):
                    mt_calls.append(z["mt_calls"])
                switch_s.append(float(z["switch_interval"]))
    hot_a = np.vstack(hot) if hot else np.zeros((0, _HOT_COLS), dtype=np.int64)
    hot_a = hot_a[np.argsort(hot_a[:, 0])]
    starts = np.sort(np.concatenate(bp)) if bp else np.zeros(0, dtype=np.int64)
    return {"hot_end_ns": hot_a[:, 0], "latency_ms": hot_a[:, 1] / 1e6, "drops": hot_a[:, 2],
            "latency_to_start_ms": hot_a[:, 5] / 1e6,
            "lidar_gap_ms": hot_a[:, 6] / 1e6,
            "lidar_phase_ms": np.where(hot_a[:, 7] == _NO_STAMP, np.nan, hot_a[:, 7] / 1e6),
            "lidar_late_ms": np.where(hot_a[:, 8] == _NO_STAMP, np.nan, hot_a[:, 8] / 1e6),
            "hops_ms": np.where(hot_a[:, 9:-1] == _NO_STAMP, np.nan, hot_a[:, 9:-1] / 1e6),
            # the KPI starts at the later lidar callback and so counts that lidar's transformer
            # (the rear's holds the TPU segment): which one it was, per instance
            "later_front": hot_a[:, -1].astype(bool),
            "bp_period_ms": np.diff(starts) / 1e6, "published": published.tolist(),
            "sub_drops": dict(sorted(sub_drops.items(), key=lambda kv: (-kv[1], kv[0]))),
            "excess_ms": excess, "rt": rt, "t0_ns": int(start_at * 1e9),
            # per process: how many of its threads may run on each set of cores, mid-run
            "threads": threads,
            # per process (E0, ... or E0+E1+E2+E3): its collector's pauses (common.GcPauses)
            "gc_ns": gc_ns,
            "gpu_segment_ms": gpu_wall,
            # the hot path executor's callbacks: start, end (ns), chain priority, E0's thread on
            # a CPU and waiting for one at the start and at the end (ns, -1: unknown), the CPU
            # time it spent in the burn (ns); by start
            "hot_executor_calls_ns": _by_start(hot_calls),
            # MT with one pool of threads: every callback (case_study2_threads.CALL_COLS), by
            # start; None in the other setups
            "mt_calls_ns": threads_bd.by_start(mt_calls) if mt_calls else None,
            # Python's switch interval in the executor processes (ms)
            "switch_interval_ms": max(switch_s) * 1e3 if switch_s else float("nan"),
            # per PAAM GPU request: chain priority, then paamd's _STAGES stamps (ns)
            "gpu_stages_ns": (np.vstack(gpu_stages) if gpu_stages
                              else np.zeros((0, 1 + len(_STAGES)), dtype=np.int64)),
            # /proc/stat every second: interval ends (ns), CPUs, busy and stolen ms per CPU
            **common.host_series(host)}


_E0_COLS = ("hot_ms", "lower_ms", "outside_ms", "lower_started", "callbacks", "outside_cpu_ms",
            "outside_runq_ms", "outside_rest_ms", "inside_runq_ms", "longest_gap_cpu_ms",
            "inside_beyond_burn_ms", "probe_c_us", "probe_py_us")
_E0_SPLIT = ("outside_cpu_ms", "outside_runq_ms", "outside_rest_ms", "inside_runq_ms")
_E0_SPLIT_MORE = ("callbacks", "longest_gap_cpu_ms", "inside_beyond_burn_ms")
# hot_executor_calls: start, end, priority, cpu and run-queue ns at start, at end, burn's CPU ns,
# --cpu-probe's C and Python probe ns (-1: not run)
_CALL_COLS = 10
_SCHED = slice(3, 8)   # the scheduler counters' and the burn's columns
_PROBE = slice(8, 10)  # --cpu-probe's


def _by_start(parts: list) -> np.ndarray:
    parts = [p if p.shape[1] == _CALL_COLS else  # (records from before the scheduler columns)
             np.hstack([p, np.full((len(p), _CALL_COLS - p.shape[1]), -1, dtype=np.int64)])
             for p in parts]
    a = np.vstack(parts) if parts else np.zeros((0, _CALL_COLS), dtype=np.int64)
    return a[np.argsort(a[:, 0], kind="stable")]


def due_ns(r: dict) -> np.ndarray | None:
    """Per hot-path instance, the later lidar timer's due time (ns; where its lateness is not
    on record, the later lidar callback's start), None without the lateness column."""
    late = r.get("lidar_late_ms")
    if late is None:
        return None
    return r["hot_end_ns"] - np.round((r["latency_ms"] + np.nan_to_num(late)) * 1e6).astype(
        np.int64)


def executor_breakdown(r: dict) -> dict[str, np.ndarray] | None:
    """Where each hot-path instance's time from the lidar timers' due time went on the hot
    path's executor (E0), from its callbacks' records: busy in hot-path callbacks (this
    instance's or an earlier one's), busy in lower-priority callbacks (the analysis' blocking),
    outside any callback (the executor's own work, waits for messages), all in ms, and how many
    lower-priority callbacks started after the due time, and how many callbacks ran in it.
    Where the thread's scheduler counters were recorded, the time outside callbacks splits into
    E0's own CPU time (the executor, Python), time runnable but waiting for its CPU (another
    thread had it), and the rest (asleep: waiting for a message or timer; or taken by the host,
    which the guest's counters do not see), with the CPU time of the one gap between callbacks
    that had the most; the run-queue wait inside callbacks; and the CPU time inside callbacks
    beyond the number cruncher's burn (Python's and rclpy's work there, a fixed amount: where it
    grows with the time outside callbacks, the CPU itself ran slower). The gaps and callbacks at
    the instance's edges count in proportion to their overlap with it. None where not recorded
    (awaited segments, ROS 2's MT, runs before the record existed)."""
    calls = r.get("hot_executor_calls_ns")
    due = due_ns(r)
    if calls is None or not len(calls) or due is None:
        return None
    ends, lat, late = r["hot_end_ns"], r["latency_ms"], r["lidar_late_ms"]
    starts, stops = calls[:, 0], calls[:, 1]
    hot = calls[:, 2] >= HOT_PRIORITY
    sched_ok = calls.shape[1] >= _SCHED.stop and bool((calls[:, _SCHED] >= 0).any())
    probed = calls.shape[1] >= _PROBE.stop and bool((calls[:, _PROBE] >= 0).any())
    out = {k: np.full(len(lat), np.nan) for k in _E0_COLS}
    for i in np.flatnonzero(~np.isnan(late)):
        a, b = due[i], ends[i]
        # (a callback may end a little after the instance's end stamp: the estimator's own)
        lo, hi = np.searchsorted(stops, a, "right"), np.searchsorted(starts, b, "left")
        if lo >= hi or a < starts[0]:
            continue  # the record does not reach back to this instance's due time
        busy = (np.minimum(stops[lo:hi], b) - np.maximum(starts[lo:hi], a)) / 1e6
        h = hot[lo:hi]
        out["hot_ms"][i], out["lower_ms"][i] = busy[h].sum(), busy[~h].sum()
        out["outside_ms"][i] = (b - a) / 1e6 - busy.sum()
        out["lower_started"][i] = int(((starts[lo:hi] > a) & ~h).sum())
        out["callbacks"][i] = hi - lo
        if sched_ok:
            _split_by_scheduler(out, i, calls, a, b, lo, hi)
        if probed:  # the median over the instance's callbacks: a rare preempted probe is ignored
            pr = calls[lo:hi, _PROBE]
            pr = pr[(pr >= 0).all(axis=1)]
            if len(pr):
                out["probe_c_us"][i], out["probe_py_us"][i] = np.median(pr, axis=0) / 1e3
    return out


def _split_by_scheduler(out: dict, i: int, calls: np.ndarray, a: int, b: int, lo: int,
                        hi: int) -> None:
    """Instance i's time outside E0's callbacks by E0's scheduler counters (executor_breakdown):
    over the gaps between calls lo-1 .. hi (each weighted by its overlap with [a, b]), and the
    run-queue wait inside calls lo .. hi-1."""
    starts, stops = calls[:, 0], calls[:, 1]
    c = calls[max(lo - 1, 0):min(hi + 1, len(calls))]
    if (c[:, _SCHED] < 0).any():
        return
    # gap k: from call k's end to call k+1's start
    g0, g1 = c[:-1, 1], c[1:, 0]
    span = np.maximum(g1 - g0, 1)
    w = np.clip(np.minimum(g1, b) - np.maximum(g0, a), 0, None) / span
    cpu = (c[1:, 3] - c[:-1, 5]) * w
    runq = (c[1:, 4] - c[:-1, 6]) * w
    out["outside_cpu_ms"][i] = cpu.sum() / 1e6
    out["longest_gap_cpu_ms"][i] = cpu.max() / 1e6 if len(cpu) else 0.0
    out["outside_runq_ms"][i] = runq.sum() / 1e6
    out["outside_rest_ms"][i] = max(out["outside_ms"][i] - (cpu.sum() + runq.sum()) / 1e6, 0.0)
    inside = calls[lo:hi]
    wi = (np.minimum(stops[lo:hi], b) - np.maximum(starts[lo:hi], a)) / np.maximum(
        stops[lo:hi] - starts[lo:hi], 1)
    out["inside_runq_ms"][i] = float(((inside[:, 6] - inside[:, 4]) * wi).sum() / 1e6)
    out["inside_beyond_burn_ms"][i] = float(
        ((inside[:, 5] - inside[:, 3] - inside[:, 7]) * wi).sum() / 1e6)


def _breakdown_summary(bd: dict | None) -> dict | None:
    """The hot path executor's time per instance (summaries) and the slowest instance's."""
    if bd is None:
        return None
    ok = ~np.isnan(bd["hot_ms"])
    if not ok.any():
        return None
    worst = int(np.nanargmax(bd["hot_ms"] + bd["lower_ms"] + bd["outside_ms"]))
    started = bd["lower_started"][ok].astype(int)
    out = {"instances": int(ok.sum()),
           **{k: common.summarize(bd[k][ok]) for k in ("hot_ms", "lower_ms", "outside_ms")},
           "lower_started_histogram": {str(k): int(v) for k, v in
                                       zip(*np.unique(started, return_counts=True))},
           "slowest": {k: float(bd[k][worst]) for k in bd}}
    split = ok & ~np.isnan(bd["outside_cpu_ms"])
    if split.any():
        # where E0's time outside callbacks went, over all instances and over the 1% with the
        # most of it (means)
        top = split & (bd["outside_ms"] >= np.quantile(bd["outside_ms"][split], 0.99))
        keys = _E0_SPLIT + _E0_SPLIT_MORE
        out["outside_split"] = {
            "instances": int(split.sum()),
            **{k: common.summarize(bd[k][split]) for k in keys},
            "most_outside_1pct": {"instances": int(top.sum()),
                                  **{k: float(bd[k][top].mean()) for k in
                                     ("outside_ms",) + keys}}}
        probe = split & ~np.isnan(bd["probe_c_us"])
        if probe.sum() > 2:
            out["cpu_probe"] = _probe_summary(bd, probe, top & probe)
    return out


def _probe_summary(bd: dict, ok: np.ndarray, top: np.ndarray) -> dict:
    """--cpu-probe per instance (the median of its callbacks' probes, µs): over all instances,
    over the 1% with the most time outside callbacks, and each probe's correlation with E0's
    own CPU time outside callbacks and inside them beyond the burn. The same fixed work taking
    longer where E0's own CPU time grew says the CPU ran slower then."""
    out: dict = {"instances": int(ok.sum())}
    for k in ("probe_c_us", "probe_py_us"):
        x = bd[k][ok]
        out[k] = {**common.summarize(x),
                  "most_outside_1pct_mean": float(bd[k][top].mean()) if top.any() else float("nan"),
                  "r_outside_cpu": common.correlation(x, bd["outside_cpu_ms"][ok]),
                  "r_inside_beyond_burn": common.correlation(x, bd["inside_beyond_burn_ms"][ok])}
    return out


def analysis_bounds(r: dict, args, pl: dict, n_buckets: int, bd: dict | None) -> dict | None:
    """The analysis' bound on the 4ST hot path for a PAAM run (ms, from the timers' due time),
    with what the run measured of its inputs: epsilon, the largest server overhead of a
    hot-path GPU request (its stages less the device's); the executor's and Python's own cost
    per callback, the largest CPU time beyond a callback's burn plus the largest time per
    hot-path callback E0 spent outside its callbacks in an instance; and the largest settings
    request (submitted -> woken). Three bounds: as written (declared run times), with that
    cost, and with the settings callback holding E0 through its request (synchronous
    segments; awaited ones release E0 meanwhile)."""
    prios, d, _ = _stage_durations(r["gpu_stages_ns"])
    hot = prios == HOT_PRIORITY
    if not hot.any():
        return None
    dev = _STAGE_NAMES.index("device_start->device_end")
    eps = float((d[hot].sum(axis=1) - d[hot, dev]).max()) / 1e6
    settings = prios == SETTINGS_PRIORITY
    blocker = float(d[settings].sum(axis=1).max()) / 1e6 if settings.any() else 0.0
    beyond = max(0.0, max(r["excess_ms"])) if len(r["excess_ms"]) else 0.0
    outside = (float(np.nanmax(bd["outside_ms"])) / len(HOT_CALLBACKS)
               if bd is not None and not np.isnan(bd["outside_ms"]).all() else 0.0)
    cost = beyond + outside
    kappa = common.default_kappa(args.backend)
    base = dict(gpu_ms=args.gpu_ms, tpu_ms=args.tpu_ms, scale=args.scale,
                executor_cpus=pl["executor_cpus"], buckets=n_buckets, epsilon=eps, kappa=kappa)
    return {"spec_args": base, "epsilon_ms": eps, "kappa_ms": kappa,
            "cost_per_callback_ms": cost,
            "cpu_beyond_burn_max_ms": beyond, "outside_per_callback_max_ms": outside,
            "settings_request_max_ms": blocker,
            "as_written": hot_path_bound(analysis_spec(**base)),
            "with_cost": hot_path_bound(analysis_spec(**base, extra_cpu_ms=cost)),
            "with_cost_sync_blocker": hot_path_bound(analysis_spec(
                **base, extra_cpu_ms=cost, blocker_request_ms=blocker))}


# -- driver -------------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--setups", default=None,
                   help="subset of 4ST, MT (default both; with --quick 4ST)")
    p.add_argument("--methods", default="ros2,picas,paam", help="subset of ros2, picas, paam")
    p.add_argument("--duration", type=float, default=600.0,
                   help="seconds per setup and method (default 600, the paper's 10 minutes)")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds not recorded (default 2)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="factor on the run times and segments (default 1: the reference "
                        "system's run times); the periods stay the reference system's")
    p.add_argument("--gpu-ms", type=float, default=1.0,
                   help="GPU segment of every callback but the behavior planner's, before "
                        "--scale (default 1 ms)")
    p.add_argument("--tpu-ms", type=float, default=5.0,
                   help="TPU segment of the rear points transformer, before --scale "
                        "(default 5 ms)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"],
                   help="GPU backend (the TPU stand-in is always the cpu backend)")
    p.add_argument("--rt", default="auto", choices=["auto", "fifo", "nice"],
                   help="executor OS priorities for PiCAS and PAAM: SCHED_FIFO when permitted "
                        "else a nice ladder (auto), SCHED_FIFO only, or the nice ladder only "
                        "(paamd then runs without --rt, its dispatcher raised to nice -20)")
    p.add_argument("--direct-keeps-priority", action="store_true",
                   help="cpu backend: let direct kernels run at the executor's OS priority")
    p.add_argument("--wait", default="suspend", choices=["suspend", "hybrid", "spin"],
                   help="how PAAM's callbacks wait for paamd's answer (default suspend; the "
                        "direct CUDA baselines spin on a completion flag)")
    p.add_argument("--hot-wait", default=None, choices=["suspend", "hybrid", "spin"],
                   help="how PAAM's hot-path callbacks wait for paamd's answer (default: as "
                        "--wait). With --server-spin-buckets 1, 'spin' gives the hot path "
                        "the fastest round trip at a busy core for its executor's waits only, "
                        "where --wait spin --server-poll-us always busies every core paamd has")
    p.add_argument("--request-priority", default="chain", choices=["chain", "executor"],
                   help="the priority paamd ranks a PAAM GPU request by: its callback's chain "
                        "priority (default, the paper's rule), or the most critical chain "
                        "priority of the callback's executor (an executor-wide ceiling: a "
                        "less critical callback's request then cannot keep the executor, and "
                        "the critical callbacks waiting on it, behind other executors' work)")
    p.add_argument("--segments", default="sync", choices=["sync", "async"],
                   help="how a PAAM callback waits for its GPU and TPU requests: sync "
                        "(default; it holds its executor, as in the paper's evaluation) or "
                        "async (it awaits them, the paper's asynchronous request; the executor "
                        "runs callbacks of that callback's priority or above meanwhile). "
                        "PiCAS and ROS 2 invoke directly, on the callback's thread: always sync")
    common.add_server_arguments(p)
    common.add_keep_awake_argument(p)
    common.add_gc_argument(p)
    common.add_executor_wait_argument(p)
    p.add_argument("--mt-executor", default="partitioned", choices=["partitioned", "shared"],
                   help="MT for PiCAS and PAAM: four PicasExecutors in one process, each over "
                        "the 4ST executor's nodes on its core (partitioned, the default), or "
                        "the paper's one multi-threaded executor, a MultiThreadedPicasExecutor "
                        "whose four threads (one per core, all at E0's priority) share every "
                        "callback (shared). ROS 2's MT is rclpy's MultiThreadedExecutor either "
                        "way")
    p.add_argument("--hot-lanes", type=int, default=1, metavar="N",
                   help="PAAM: kernels the GPU paamd's most urgent bucket (the hot path's) runs "
                        "at once, each on its own stream at that bucket's priority (paamd "
                        "--lanes N). Default 1, the paper's rule: the hot path's two lidar and "
                        "two transformer branches, side by side in MT, then wait for each "
                        "other's segments")
    p.add_argument("--mt-hot-threads", type=int, default=0, metavar="K",
                   help="with --mt-executor shared: the first K threads (E0's core first) run "
                        "only the hot path's callbacks (a priority floor per thread), the "
                        f"others any callback; 0 to {len(EXECUTORS) - 1} (default 0: every "
                        "thread runs any callback)")
    p.add_argument("--intersection-groups", default="node", choices=["node", "connection"],
                   help="the intersection node's (EuclideanClusterDetector's) two connections: "
                        "in the node's one mutually exclusive callback group (node, default: "
                        "the reference system's), or each in its own (connection: where several "
                        "threads run the node, MT, its hot-path connection no longer waits for "
                        "the cluster-settings one; always so with --segments async)")
    p.add_argument("--e0-executor", default="rclpy", choices=["rclpy", "cpp"],
                   help="4ST: the hot path's executor E0 as an rclpy process (rclpy, default) "
                        "or as paam_cs2_executor (cpp: the same nodes and callbacks in C++ on "
                        "rcl, ros2/picas_rcl, built by `make ros`; synchronous segments only), "
                        "for every method: PiCAS's executor for PiCAS and PAAM, rclcpp's "
                        "SingleThreadedExecutor order for ROS 2. E1-E3 and MT stay rclpy")
    p.add_argument("--switch-interval-ms", type=float, default=None, metavar="MS",
                   help="Python's switch interval in the executor processes "
                        "(sys.setswitchinterval): how long a thread holding the GIL keeps it "
                        "from a thread that asks for it; above 0 (default: Python's, 5 ms). "
                        "Where a pool of threads shares one process (MT), a hot-path callback "
                        "may wait this long for a lower one's Python work")
    p.add_argument("--dds-cpus", default="executor", choices=["executor", "spare"],
                   help="where each executor process's other threads run (Fast DDS's receive "
                        "and event threads): on the process's executor cores (default, as "
                        "taskset on the whole process; they then take their turns on the "
                        "executors' cores) or on the cores no executor or stand-in uses (spare: "
                        "paamd's; the executor cores where there are none). The executor "
                        "threads are pinned to their cores either way")
    p.add_argument("--cpu-probe", action="store_true",
                   help="run a fixed piece of work (C and Python, about 20 µs) on E0's thread "
                        "before each of its callbacks and record how long it took: whether "
                        "E0's CPU ran slower in the slow instances (off by default: it adds "
                        "its time to E0's outside callbacks)")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke scale: --scale 0.2, 3 s per method, 4ST unless --setups "
                        "says otherwise")
    p.add_argument("--replot", action="store_true",
                   help="only redraw the figures from the CSV files of earlier runs (--inputs) "
                        "into --out")
    p.add_argument("--inputs", default="",
                   help="--replot: comma-separated result folders to draw together, e.g. the "
                        "4ST and MT runs of a machine with a per-command time limit; a "
                        "setup x method in several: the last wins (default: --out)")
    p.add_argument("--out", default="results/eval/case-study-2")


def placement_for(backend: str) -> dict:
    """Executor cores (the paper's 2-5 mapped onto the cores beside the device core), the GPU
    stand-in's core and the TPU stand-in's core."""
    cpus = common.host_cpus(backend)
    dev = common.device_cpu() if backend == "cpu" else -2
    ex_cpus = {e[0]: common.map_cpu(e[1], cpus) for e in EXECUTORS}
    spare = [c for c in cpus if c not in ex_cpus.values()]
    if spare:
        tpu, tpu_note = spare[-1], "own core"
    elif backend == "cpu" and dev >= 0:
        tpu, tpu_note = dev, "shares the GPU stand-in's core (no core left)"
    else:
        tpu, tpu_note = cpus[-1], "shares an executor core (no core left)"
    # the servers' threads (dispatchers, control, CUDA workers) on the cores left, if any
    server_cpus = [c for c in spare if c not in (tpu, dev)]
    return {"executor_cpus": ex_cpus, "device_cpu": dev, "tpu_cpu": tpu, "tpu_note": tpu_note,
            "host_cpus": cpus, "server_cpus": server_cpus}


def helper_cpus(placement: dict, args) -> list[int] | None:
    """Where the executor processes' threads other than their executors run (Fast DDS's
    receive and event threads, started with the rclpy context): None for the process's own
    executor cores (``--dds-cpus executor``, as ``taskset`` on a whole process), else the
    cores no executor or stand-in uses (``spare``: the servers' cores), where there are any."""
    if args.dds_cpus == "spare" and placement["server_cpus"]:
        return list(placement["server_cpus"])
    return None


def _thread_cpus_line(by_process: dict) -> str:
    """{"E0": {"2": 1, "0-1,6-14": 9}} -> "E0: 1 on 2, 9 on 0-1,6-14"."""
    return " | ".join(f"{name}: " + ", ".join(f"{n} on {cpus}" for cpus, n in counts.items())
                      for name, counts in by_process.items()) or "not recorded"


def helper_cpus_label(placement: dict, args) -> str:
    cpus = helper_cpus(placement, args)
    if cpus is not None:
        return "on cores " + common.cpu_ranges(cpus)
    return "on their executors' cores" + (" (--dds-cpus spare: no core left)"
                                          if args.dds_cpus == "spare" else "")


def run(args: argparse.Namespace) -> int:
    if args.replot:
        import json
        out = common.out_dir(args.out)
        inputs = [Path(x.strip()) for x in args.inputs.split(",") if x.strip()] or [out]
        params = [json.loads((d / "summary.json").read_text())["params"] for d in inputs]
        if len({(p["scale"], p["gpu_ms"]) for p in params}) > 1:
            raise SystemExit("--inputs: the runs differ in --scale or --gpu-ms")
        results: dict = {}
        for d in inputs:
            results.update(load_results(d)[0])
        setups = [s for s in SETUPS if any(k[0] == s for k in results)]
        methods = [m for m in common.METHODS if any(k[1] == m for k in results)]
        for s in setups:  # a run that did not cover every setup x method: draw it empty
            for m in methods:
                results.setdefault((s, m), {"latency_ms": np.zeros(0), "drops": np.zeros(0, int),
                                            "bp_period_ms": np.zeros(0)})
        args.scale, args.gpu_ms = params[0]["scale"], params[0]["gpu_ms"]
        plot_latency(results, setups, methods, out / "fig11a_hot_path_latency.png", args)
        plot_bp(results, setups, methods, out / "fig11b_bp_period.png", args)
        plot_drops(results, setups, methods, out / "fig11c_drops.png", args)
        print(f"redrew {out}/fig11a_hot_path_latency.png, fig11b_bp_period.png, fig11c_drops.png")
        return 0
    from paam.ros import ROS_MISSING_HINT, ros_available
    if not ros_available():
        print(f"paam eval case-study-2: {ROS_MISSING_HINT}")
        return 2
    try:
        import std_msgs.msg  # noqa: F401
    except ImportError:
        print("paam eval case-study-2: std_msgs is missing (scripts/requirements-ros.txt)")
        return 2
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(100, 200)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if args.quick:
        args.scale = min(args.scale, 0.2)
        args.duration = min(args.duration, 3.0)
        args.warmup = min(args.warmup, 1.0)
    if args.setups is None:
        args.setups = "4ST" if args.quick else "4ST,MT"
    methods = common.parse_methods(args.methods)
    setups = [s.strip().upper() for s in args.setups.split(",") if s.strip()]
    if not setups or any(s not in SETUPS for s in setups):
        raise SystemExit("--setups: choose from 4ST, MT")
    if args.scale <= 0 or args.duration <= 0 or args.gpu_ms < 0 or args.tpu_ms < 0:
        raise SystemExit("--scale and --duration must be positive, segments not negative")
    if not 1 <= args.hot_lanes <= 8:
        raise SystemExit(f"--hot-lanes: 1 to 8, not {args.hot_lanes}")
    if not 0 <= args.mt_hot_threads < len(EXECUTORS):
        raise SystemExit(f"--mt-hot-threads: 0 to {len(EXECUTORS) - 1} (one thread at least "
                         f"must run any callback), not {args.mt_hot_threads}")
    if args.switch_interval_ms is not None and not args.switch_interval_ms > 0:
        raise SystemExit(f"--switch-interval-ms: above 0, not {args.switch_interval_ms}")
    if args.e0_executor == "cpp":
        if args.segments == "async":
            raise SystemExit("--e0-executor cpp runs synchronous segments only (no --segments "
                             "async)")
        from paam_experiments import case_study2_cpp
        try:
            case_study2_cpp.program()
        except FileNotFoundError as err:
            raise SystemExit(f"--e0-executor cpp: {err}") from None
    if args.mt_hot_threads and args.mt_executor != "shared":
        raise SystemExit("--mt-hot-threads needs --mt-executor shared (the partitioned MT's "
                         "threads each run their own executor's nodes)")
    args.gpu_ms_eff = args.gpu_ms * args.scale
    args.tpu_ms_eff = args.tpu_ms * args.scale
    pl = placement_for(args.backend)
    if len(set(pl["executor_cpus"].values())) < len(EXECUTORS) or not pl["server_cpus"]:
        # A callback spinning on a core it shares holds every lower executor there off it for
        # its whole segment (the analysis' spin(h) = H*h) and, above paamd's dispatcher on the
        # dispatcher's core, keeps its own request from being dispatched.
        for flag, attr in (("--wait", "wait"), ("--hot-wait", "hot_wait")):
            if getattr(args, attr) not in (None, "suspend"):
                print(f"  {flag} {getattr(args, attr)} ignored: the executors share cores, or "
                      "paamd has none of its own, on this machine; those callbacks suspend",
                      flush=True)
                setattr(args, attr, "suspend")
    dem = demand(args.gpu_ms_eff, args.tpu_ms_eff, args.scale)
    out = common.out_dir(args.out)
    meta = common.machine_meta(args.backend)
    keys = common.KEY_OF_METHOD
    print(f"paam eval case-study-2: the Autoware reference system ({len(SYSTEM)} nodes), "
          f"run times and segments x{args.scale:g} (GPU {args.gpu_ms_eff:g} ms, TPU "
          f"{args.tpu_ms_eff:g} ms), {args.duration:g} s per run, setups {'/'.join(setups)}, "
          f"methods {'/'.join(methods)}\n  {common.machine_line(meta)}\n  executor CPUs: "
          + ", ".join(f"{k}->{v}" for k, v in pl["executor_cpus"].items())
          + (f"; GPU stand-in core {pl['device_cpu']}" if args.backend == "cpu" else "")
          + f"; TPU stand-in core {pl['tpu_cpu']} ({pl['tpu_note']}); the executor "
          f"processes' other threads (DDS's) {helper_cpus_label(pl, args)}\n  demand per 4ST "
          "executor (CPU ms/s): " + ", ".join(
              f"{k} {v['cpu_ms_per_s']:.0f}" for k, v in dem["executors"].items())
          + f"; GPU {dem['gpu_ms_per_s']:.0f} ms/s, TPU {dem['tpu_ms_per_s']:.0f} ms/s, "
          f"{dem['callbacks_per_s']:.0f} callbacks/s", flush=True)

    from paam_experiments.case_study1 import raise_server_threads
    from paam.testing import start_server
    n_buckets = len(set(CHAIN_PRIORITY.values()) | set(CONNECTION_PRIORITY.values()))
    results: dict[tuple[str, str], dict] = {}
    server_notes = []
    paamd_said: dict[str, list[str]] = {}
    runs = [(s, m) for s in setups for m in methods]
    with tempfile.TemporaryDirectory(prefix="paam-eval-cs2-") as tmp, \
            (common.keep_awake(common.awake_cpus(pl["host_cpus"], pl["server_cpus"], args))
             if args.keep_awake else contextlib.nullcontext()):
        for i, (setup, m) in enumerate(runs, 1):
            label = f"[{i}/{len(runs)}] {setup} / {m}"
            print(f"{label} ...", flush=True)
            t0 = time.monotonic()
            if m == "PAAM":
                # polling threads: both servers' dispatchers, the GPU server's workers (the
                # TPU stand-in's worker polls on its own core). --server-pin: the GPU server's
                # threads on all of paamd's cores but the last, the TPU server's dispatcher there
                rt = (([] if args.rt == "nice" else ["--rt"])
                      + common.dispatcher_args(args, max(e[2] for e in EXECUTORS)))
                cpus = common.server_cores(args, pl["server_cpus"])
                threads = common.paamd_workers(args.backend, n_buckets) + args.hot_lanes + 1
                gpu_args = (rt + common.server_poll_args(args, cpus, threads, pin_cpus=cpus[:-1])
                            + common.cuda_wait_args(args)
                            + common.spin_bucket_args(args, n_buckets, cpus)
                            + (["--lanes", str(args.hot_lanes)] if args.hot_lanes > 1 else []))
                tpu_args = (rt + common.server_poll_args(args, cpus, threads, pin_cpus=cpus[-1:])
                            + common.spin_bucket_args(args, 1, cpus))
                with start_server(buckets=n_buckets, backend=args.backend,
                                  device_cpu=pl["device_cpu"] if args.backend == "cpu" else None,
                                  extra_args=gpu_args, cpus=cpus) as gpu_srv, \
                        start_server(buckets=1, backend="cpu", device_cpu=pl["tpu_cpu"],
                                     extra_args=tpu_args, cpus=cpus) as tpu_srv:
                    if args.rt == "nice":
                        server_notes = [raise_server_threads(gpu_srv.pid, pl["device_cpu"]),
                                        raise_server_threads(tpu_srv.pid, pl["tpu_cpu"])]
                    res = run_one(setup, keys[m], args, tmp, {"gpu": gpu_srv.socket_path,
                                                              "tpu": tpu_srv.socket_path},
                                  pl["executor_cpus"], pl, label)
                    paamd_said = {"gpu": common.paamd_startup(gpu_srv),
                                  "tpu": common.paamd_startup(tpu_srv)}
            else:
                res = run_one(setup, keys[m], args, tmp, {}, pl["executor_cpus"], pl, label)
            results[(setup, m)] = res
            lat = res["latency_ms"]
            print(f"    done in {time.monotonic() - t0:.0f} s: {lat.size} hot-path instances, "
                  f"max {np.max(lat) if lat.size else float('nan'):.1f} ms, "
                  f"{int(res['drops'].sum())} drops", flush=True)

    summary: dict = {}
    rows, raw_hot, raw_bp, stage_rows, host_rows = [], [], [], [], []
    for (setup, m), r in results.items():
        lat, drops, bp = r["latency_ms"], r["drops"], r["bp_period_ms"]
        s = {"hot_path_ms": common.summarize(lat), "bp_period_ms": common.summarize(bp),
             "hot_path_to_estimator_start_ms": common.summarize(r["latency_to_start_ms"]),
             "drops": {"total": int(drops.sum()), "instances_with_drops":
                       int((drops > 0).sum()), "max_per_instance":
                       int(drops.max()) if drops.size else 0,
                       "mean_per_instance": float(drops.mean()) if drops.size else float("nan"),
                       "histogram": {str(int(k)): int(v) for k, v in
                                     zip(*np.unique(drops, return_counts=True))}},
             "drops_by_subscription": r.get("sub_drops", {}),
             "lidar_samples": {"front": r["published"][0], "rear": r["published"][1],
                               "expected_each": int(args.duration * 1e3 // 100)},
             "rt": r["rt"], "thread_cpus": r["threads"],
             "cpu_beyond_burn_ms": common.summarize(r["excess_ms"]),
             "gpu_segment_wall_ms": common.summarize(r.get("gpu_segment_ms", [])),
             "paam_gpu_stages_ms": _stage_summary(r["gpu_stages_ns"]),
             "paam_gpu_request_ms_by_chain_priority": _request_by_priority(r["gpu_stages_ns"]),
             "hot_path_hops_ms": _hop_summary(lat, r["hops_ms"], r["latency_to_start_ms"]),
             "later_lidar": _later_lidar(lat, r["later_front"]),
             "lidar_gap_ms": common.summarize(r["lidar_gap_ms"]),
             "lidar_phase_ms": common.summarize(r["lidar_phase_ms"][~np.isnan(
                 r["lidar_phase_ms"])]),
             "lidar_late_ms": common.summarize(r["lidar_late_ms"][~np.isnan(
                 r["lidar_late_ms"])]),
             # the hot path from the later lidar timer's due time: the KPI above starts at its
             # callback's start, as the reference system's does, and leaves its lateness out
             "hot_path_from_due_ms": common.summarize(_from_due(lat, r["lidar_late_ms"])),
             **_host_summary(r, pl), "gc": _gc_summary(r),
             "python_switch_interval_ms": r["switch_interval_ms"]}
        bd = executor_breakdown(r)
        s["hot_executor_from_due"] = _breakdown_summary(bd)
        tb = threads_bd.thread_breakdown(r, due_ns(r), HOT_PRIORITY, HOT_IDS)
        s["mt_threads_from_due"] = threads_bd.thread_summary(tb, lat + r["lidar_late_ms"])
        if r.get("mt_calls_ns") is not None:
            s["mt_node_overlap_ms"] = threads_bd.node_overlaps(r["mt_calls_ns"],
                                                               [n.name for n in SYSTEM])
        if setup == "4ST" and m == "PAAM":
            s["analysis"] = analysis_bounds(r, args, pl, n_buckets, bd)
            if s["analysis"]:
                s["analysis"]["observed_from_due_max_ms"] = s["hot_path_from_due_ms"]["max"]
        summary.setdefault(setup, {})[m] = s
        rows.append({"setup": setup, "method": m, "instances": s["hot_path_ms"]["n"],
                     "hot_min_ms": s["hot_path_ms"]["min"], "hot_mean_ms": s["hot_path_ms"]["mean"],
                     "hot_p99_ms": s["hot_path_ms"]["p99"], "hot_max_ms": s["hot_path_ms"]["max"],
                     "drops_total": s["drops"]["total"],
                     "instances_with_drops": s["drops"]["instances_with_drops"],
                     "bp_mean_ms": s["bp_period_ms"]["mean"], "bp_min_ms": s["bp_period_ms"]["min"],
                     "bp_max_ms": s["bp_period_ms"]["max"], "bp_std_ms": s["bp_period_ms"]["std"]})
        nan = np.full(len(lat), np.nan)
        bd, tb = bd or {}, tb or {}
        e0_cols = np.column_stack([bd.get(k, nan) for k in _E0_COLS])
        mt_cols = np.column_stack([tb.get(k, nan) for k in threads_bd.COLS])
        for e, x, d, st, gap, ph, late, hop, front, e0, mt in zip(
                r["hot_end_ns"], lat, drops, r["latency_to_start_ms"], r["lidar_gap_ms"],
                r["lidar_phase_ms"], r["lidar_late_ms"], r["hops_ms"], r["later_front"],
                e0_cols, mt_cols):
            raw_hot.append({"setup": setup, "method": m, "t_s": (int(e) - r["t0_ns"]) / 1e9,
                            "latency_ms": float(x), "drops": int(d),
                            # the later lidar callback's start after the earlier one's; the
                            # lidar timers' due times apart; the later callback's start after
                            # its due time (empty: not on record)
                            "lidar_gap_ms": round(float(gap), 3),
                            "lidar_phase_ms": "" if np.isnan(ph) else round(float(ph), 3),
                            "lidar_late_ms": "" if np.isnan(late) else round(float(late), 3),
                            "later_lidar": "front" if front else "rear",
                            # where the instance was: each hot-path callback's end and the
                            # estimator's start, from the later lidar stamp (a transformer of
                            # the earlier lidar may end before it; empty: not on record)
                            **{f"{n}_end_ms": "" if np.isnan(h) else round(float(h), 3)
                               for n, h in zip(HOT_HOPS, hop)},
                            "ObjectCollisionEstimator_start_ms": round(float(st), 3),
                            # E0 from the due time: busy in hot-path and in lower callbacks,
                            # outside callbacks, lower callbacks started (executor_breakdown)
                            **{f"e0_{k}": "" if np.isnan(v) else round(float(v), 3)
                               for k, v in zip(_E0_COLS, e0)},
                            # MT with one pool of threads (case_study2_threads.thread_breakdown)
                            **{f"mt_{k}": "" if np.isnan(v) else round(float(v), 3)
                               for k, v in zip(threads_bd.COLS, mt)}})
        raw_bp.extend({"setup": setup, "method": m, "period_ms": float(x)} for x in bp)
        stage_rows.extend(_stage_rows(setup, m, r["gpu_stages_ns"], r["t0_ns"]))
        host_rows.extend(_host_rows(setup, m, r, pl))
    common.write_csv(out / "summary.csv", rows)
    common.write_csv(out / "hot_path.csv", raw_hot)
    common.write_csv(out / "bp_period.csv", raw_bp)
    if stage_rows:
        common.write_csv(out / "paam_stages.csv", stage_rows)
    bounds = summary.get("4ST", {}).get("PAAM", {}).get("analysis")
    if bounds:
        from paam.analysis.model import dump_yaml
        (out / "system_4st.yaml").write_text(
            "# case study 2's 4ST hot path as the analysis sees it (analysis_spec), epsilon "
            f"measured ({bounds['epsilon_ms']:.3f} ms), kappa {bounds['kappa_ms']} ms.\n"
            "# `paam analyze` on this file gives the bound 'as written' of summary.txt. The\n"
            "# cluster-settings chain is here for the blocking it puts on the hot path: its own\n"
            "# bound leaves out the chains it shares the GPU and E3 with.\n"
            + dump_yaml(analysis_spec(**bounds["spec_args"])))
    if host_rows:
        common.write_csv(out / "host_stat.csv", host_rows)
    params = {k: v for k, v in vars(args).items() if k != "func"}
    common.write_json(out / "summary.json", {
        "meta": meta, "params": params, "direct_wait": common.direct_wait_label(args, methods),
        "placement": pl, "demand": dem,
        "gpu_buckets": n_buckets, "server_threads": server_notes,
        "paamd_startup": paamd_said,
        "hot_path_run_ms": hot_path_floor(args), "results": summary})
    text = render(summary, setups, methods, meta, args, pl, dem)
    (out / "summary.txt").write_text(text)
    print("\n" + text)
    try:
        plot_latency(results, setups, methods, out / "fig11a_hot_path_latency.png", args)
        plot_bp(results, setups, methods, out / "fig11b_bp_period.png", args)
        plot_drops(results, setups, methods, out / "fig11c_drops.png", args)
        panels = _host_panels(results, setups, methods)
        if panels:
            common.plot_host(panels, out / "fig11d_host_steal.png",
                             f"Case study 2 (x{args.scale:g}, GPU segment {args.gpu_ms_eff:g} "
                             "ms): hot-path latency over time, and what the host stole from "
                             "the CPUs")
        print(f"wrote {out}/summary.csv, hot_path.csv, bp_period.csv, summary.json, "
              "summary.txt, fig11a_hot_path_latency.png, fig11b_bp_period.png, fig11c_drops.png"
              + (", host_stat.csv, fig11d_host_steal.png" if panels else ""))
    except Exception as exc:  # noqa: BLE001
        print(f"wrote {out}/summary.*, hot_path.csv, bp_period.csv (no plots: {exc})")
    return 0


def _hot_subscription(key: str) -> bool:
    node, _, topic = key.partition("<-")
    return node in HOT_PATH and topic in HOT_PATH


def _skipped(lidar: dict) -> str:
    exp = lidar.get("expected_each")
    if exp is None:
        return "n/a"
    return str(max(0, exp - lidar["front"]) + max(0, exp - lidar["rear"]))


def hot_path_floor(args) -> float:
    """The least a hot-path instance can take (ms): from the later lidar stamp, that lidar's
    own callback, one points transformer, the fusing callback, ray ground filter, cluster
    detector and collision estimator, each its run time and GPU segment. That is the front
    lidar's floor; an instance the rear lidar starts also counts TPU_NODE's TPU segment
    (paam_experiments.history._floor adds it per run)."""
    runs = (SENSOR + TRANSFORM + FUSE + 3 * TRANSFORM) * args.scale
    return runs + 6 * args.gpu_ms * args.scale


_STAGE_NAMES = tuple(f"{a}->{b}" for a, b in zip(_STAGES, _STAGES[1:]))


def _stage_durations(stages) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chain priorities, stage durations in ns: one column per _STAGE_NAMES, submit stamps)
    of the recorded PAAM GPU requests (rows: chain priority, then the _STAGES stamps) that have
    every stamp."""
    a = np.asarray(stages, dtype=np.int64).reshape(-1, 1 + len(_STAGES))
    ok = (a[:, 1:] > 0).all(axis=1)
    return a[ok, 0], np.diff(a[ok, 1:], axis=1), a[ok, 1]


def _request_by_priority(stages) -> dict:
    """Whole PAAM GPU requests (submitted -> client woken, ms) per chain priority."""
    prios, d, _ = _stage_durations(stages)
    total = d.sum(axis=1) / 1e6 if d.size else np.zeros(0)
    return {str(int(p)): common.summarize(total[prios == p])
            for p in sorted(set(prios.tolist()), reverse=True)}


def _stage_summary(stages) -> dict:
    """Per-stage durations (ms) of the PAAM GPU requests."""
    d = _stage_durations(stages)[1]
    return {n: common.summarize(d[:, i] / 1e6) for i, n in enumerate(_STAGE_NAMES)}


_HOP_NAMES = ("lidar->transformers", "->fusion", "->ray ground filter", "->cluster detector",
              "->estimator start", "estimator")


def _later_lidar(lat: np.ndarray, front: np.ndarray) -> dict:
    """The hot path split by which lidar's callback started later. Both timers fall due
    together and have the same PiCAS priority, so the order is the executor's tie-break: the
    PicasExecutor's follows the order the nodes were added, rclpy's executors' can change from
    run to run or instance to instance. The KPI, from the later callback, counts that lidar's
    transformer and not the other's, whose lengths differ (the rear's holds the TPU segment)."""
    lat, front = np.asarray(lat, dtype=np.float64), np.asarray(front, dtype=bool)
    return {k: common.summarize(lat[m]) for k, m in (("front", front), ("rear", ~front))}


def _hop_summary(lat, hops, oce_start) -> dict:
    """Where the hot path's time goes: the hops between consecutive hot-path callback ends
    (both points transformers count as one, the later), then the wait for the estimator and the
    estimator itself; median over all instances and mean over the slowest 1%."""
    if not len(lat):
        return {}
    h = np.asarray(hops, dtype=np.float64)
    ok = ~np.isnan(h).any(axis=1)
    if not ok.any():
        return {}
    h, lat, oce_start = h[ok], np.asarray(lat)[ok], np.asarray(oce_start)[ok]
    ends = np.column_stack([h[:, :2].max(axis=1), h[:, 2:], oce_start, lat])
    seg = np.diff(np.column_stack([np.zeros(len(ends)), ends]), axis=1)
    slow = lat >= np.percentile(lat, 99)
    return {n: {"p50": float(np.median(seg[:, i])), "slowest_1pct_mean": float(seg[slow, i].mean())}
            for i, n in enumerate(_HOP_NAMES)}


def _stage_rows(setup: str, method: str, stages, t0_ns: int) -> list[dict]:
    """paam_stages.csv: one row per recorded PAAM GPU request: when it was submitted (s from the
    run's start, the clock of hot_path.csv's t_s), its chain priority and the duration of each
    stage (us)."""
    prios, d, sub = _stage_durations(stages)
    return [{"setup": setup, "method": method, "t_s": round((int(t) - t0_ns) / 1e9, 6),
             "chain_priority": int(p),
             **{f"{n}_us": round(float(x) / 1e3, 1) for n, x in zip(_STAGE_NAMES, row)}}
            for p, row, t in zip(prios, d, sub)]


def _from_due(latency_ms: np.ndarray, late_ms: np.ndarray | None) -> np.ndarray:
    """The hot path from the later lidar timer's due time: the KPI plus how late that lidar's
    callback started, for the instances where that is on record."""
    if late_ms is None:
        return np.zeros(0)
    ok = ~np.isnan(late_ms)
    return latency_ms[ok] + late_ms[ok]


def _gc_summary(r: dict) -> dict:
    """Python's collector in a run: per process its collections and longest pause, and the
    hot-path instances with a collection of the process that runs the hot path inside them
    (all of them, and of the slowest 1%)."""
    out: dict = {"by_process": {p: common.gc_summary(a) for p, a in r["gc_ns"].items()}}
    hot_ex = {e[0] for e in EXECUTORS if set(e[3]) & set(HOT_PATH)}
    procs = [p for p in r["gc_ns"] if hot_ex & set(p.split("+"))]
    if len(procs) != 1 or not len(r["latency_ms"]):
        return out
    end, lat = r["hot_end_ns"], r["latency_ms"]
    c, hit = common.gc_instances(end, lat, r["gc_ns"][procs[0]])
    slow = lat >= np.percentile(lat, 99)
    out["hot_path"] = {"process": procs[0], **c, "slowest_1pct": int(slow.sum()),
                       "slowest_1pct_during_a_collection": int((slow & hit).sum())}
    return out


def _host_summary(r: dict, pl: dict) -> dict:
    """What the host took from the CPUs during the run (/proc/stat each second, summed over all
    CPUs and over the executors' cores), and the hot path apart for the instances it left
    alone (:func:`common.split_by_steal`)."""
    host = common.host_summary(r, pl["executor_cpus"].values())
    if "error" in host:
        return {"host": host}
    lat, drops = r["latency_ms"], r["drops"]
    around = common.steal_around(r["hot_end_ns"], lat, r["host_t_ns"], r["host_steal_ms"])
    split = common.split_by_steal(lat, around)
    q = split["quiet_steal_ms"]  # (NaN, no sample near: in neither)
    split["drops"] = {"quiet": int(drops[around <= q].sum()), "noisy": int(drops[around > q].sum())}
    return {"host": host, "hot_path_by_host_steal": split}


def _host_rows(setup: str, method: str, r: dict, pl: dict) -> list[dict]:
    """host_stat.csv: one row per /proc/stat sample of the run (:func:`common.host_rows`, t_s
    on hot_path.csv's clock)."""
    return [{"setup": setup, "method": method, **row}
            for row in common.host_rows(r, pl["executor_cpus"].values(), r["t0_ns"])]


def _per_run(lines: list, summary, setups, methods, key: str, title: str, fmt) -> None:
    """A titled block of summary.txt: one line per run holding ``key``, ``fmt``-ed (None: no
    line)."""
    lines.append(title)
    for s in setups:
        for m in methods:
            value = summary[s][m].get(key)
            text = fmt(value) if value is not None else None
            if text is not None:
                lines.append(f"  {s} {m}: {text}")


_REQUEST_PRIORITY_LABEL = {"chain": "the chain's priority",
                           "executor": "the executor's top chain priority"}


def render(summary, setups, methods, meta, args, pl, dem) -> str:
    direct_wait = common.direct_wait_label(args, methods)
    lines = [f"Case study 2 (Autoware reference system), run times x{args.scale:g}, GPU segment "
             f"{args.gpu_ms * args.scale:g} ms, TPU {args.tpu_ms * args.scale:g} ms, "
             f"{args.duration:g} s per run; PAAM clients wait: {args.wait}"
             + (f" (the hot path's: {args.hot_wait})"
                if getattr(args, "hot_wait", None) not in (None, args.wait) else "")
             + ", GPU requests at "
             f"{_REQUEST_PRIORITY_LABEL[args.request_priority]}, paamd poll: "
             f"{common.server_poll_label(args)}, threads {common.server_pin_label(args)}"
             + (f"; {direct_wait}" if direct_wait else "")
             + ("; PAAM's segments awaited (async)"
                if args.segments == "async" else "")
             + ("; cores kept awake (SCHED_IDLE busy loops; not a polling paamd's)"
                if args.keep_awake else "")
             + ("; the PicasExecutor waits through rclpy (--executor-wait rclpy)"
                if args.executor_wait == "rclpy" else "")
             + ("; MT's PiCAS and PAAM: one MultiThreadedPicasExecutor (--mt-executor shared)"
                if args.mt_executor == "shared" else "")
             + (f", its first {args.mt_hot_threads} thread(s) for the hot path only "
                "(--mt-hot-threads)" if args.mt_hot_threads else "")
             + ("; the intersection node's connections in a callback group each "
                "(--intersection-groups connection)"
                if args.intersection_groups == "connection" else "")
             + ("; 4ST's E0 in C++ on rcl (--e0-executor cpp; ROS 2's in rclcpp's order)"
                if args.e0_executor == "cpp" else "")
             + (f"; Python's switch interval {args.switch_interval_ms:g} ms "
                "(--switch-interval-ms)" if args.switch_interval_ms else "")
             + (f"; the hot path's GPU bucket runs {args.hot_lanes} kernels at once "
                "(--hot-lanes)" if args.hot_lanes > 1 else ""),
             common.machine_line(meta),
             "hot path: later lidar stamp -> ObjectCollisionEstimator end (ms); drops: missing "
             "samples per hot-path instance; BP: behavior-planner period (set 100 ms)", ""]
    head = ["setup", "method", "n", "hot min", "mean", "p99", "max", "drops", "inst w/ drops",
            "lidar skipped", "BP mean", "BP min", "BP max", "BP std"]
    rows = [head]
    for s in setups:
        for m in methods:
            r = summary[s][m]
            h, b, d = r["hot_path_ms"], r["bp_period_ms"], r["drops"]
            rows.append([s, m, str(h["n"]), common.fmt(h["min"]), common.fmt(h["mean"]),
                         common.fmt(h["p99"]), common.fmt(h["max"]), str(d["total"]),
                         str(d["instances_with_drops"]), _skipped(r["lidar_samples"]),
                         common.fmt(b["mean"]),
                         common.fmt(b["min"]), common.fmt(b["max"]), common.fmt(b["std"])])
    lines.append(common.table(rows, right=range(2, len(head))))
    lines.append("lidar skipped: lidar timer activations that never ran (front + rear, of "
                 f"{2 * int(args.duration * 1e3 // 100)}): rclpy skips a timer's missed periods, "
                 "so a late executor loses hot-path instances without any dropped sample")
    lines.append("")
    lines.append("demand per 4ST executor (CPU ms per s): " + ", ".join(
        f"{k} {v['cpu_ms_per_s']:.0f}" for k, v in dem["executors"].items())
        + f"; GPU {dem['gpu_ms_per_s']:.0f} ms/s; TPU {dem['tpu_ms_per_s']:.0f} ms/s")
    lines.append("cores: executors " + ", ".join(
        f"{k}->{v}" for k, v in pl["executor_cpus"].items())
        + (f"; GPU stand-in {pl['device_cpu']}" if args.backend == "cpu" else "")
        + f"; TPU stand-in {pl['tpu_cpu']} ({pl['tpu_note']}); the executor processes' "
        f"other threads (DDS's) {helper_cpus_label(pl, args)}")
    for s in setups:
        for m in methods:
            lines.append(f"{s} {m} executors: " + " | ".join(summary[s][m]["rt"]))
            lines.append(f"{s} {m} threads per process by the cores they may run on (mid-run): "
                         + _thread_cpus_line(summary[s][m]["thread_cpus"]))
    lines.append("GPU segment on the executor's thread (request call, ms: p50 / mean / p99 / max); "
                 "PAAM: mean per stage of paamd's timestamps")
    for s in setups:
        for m in methods:
            w = summary[s][m].get("gpu_segment_wall_ms")
            if not w or not w["n"]:
                continue
            line = (f"  {s} {m}: {common.fmt(w['p50'], 3)} / {common.fmt(w['mean'], 3)} / "
                    f"{common.fmt(w['p99'], 3)} / {common.fmt(w['max'], 3)}")
            st = summary[s][m].get("paam_gpu_stages_ms") or {}
            if st and next(iter(st.values()))["n"]:
                line += " | " + ", ".join(f"{k} {common.fmt(v['mean'], 3)}" for k, v in st.items())
            lines.append(line)
    _per_run(lines, summary, setups, methods, "paam_gpu_request_ms_by_chain_priority",
             "PAAM GPU request by chain priority (submitted -> woken, ms: n, p50 / p99 / max)",
             lambda by: ", ".join(f"{p}: {v['n']}, {common.fmt(v['p50'])} / "
                                  f"{common.fmt(v['p99'])} / {common.fmt(v['max'])}"
                                  for p, v in by.items()) if by else None)
    _per_run(lines, summary, setups, methods, "drops_by_subscription",
             "dropped samples by subscription (node<-topic, whole recorded run; * hot path)",
             lambda sd: ", ".join(f"{k}{'*' if _hot_subscription(k) else ''} {v}"
                                  for k, v in sd.items()) or "none")
    lines.append(f"the host (/proc/stat each second): ms stolen per s from all CPUs, mean / max "
                 f"(executor cores), vCPUs the guest used (busy at least "
                 f"{common.ACTIVE_BUSY_MS_PER_S:g} ms/s), CPUs busy; hot path where the host "
                 f"stole at most {common.QUIET_STEAL_MS:g} ms/s around the instance | more (n, "
                 f"p99 / max ms, drops); latency's correlation with steal")
    for s in setups:
        for m in methods:
            h, sp = summary[s][m].get("host", {}), summary[s][m].get("hot_path_by_host_steal")
            if not sp:
                if h.get("error"):
                    lines.append(f"  {s} {m}: not sampled ({h['error']})")
                continue
            q, n = sp["quiet"], sp["noisy"]
            lines.append(
                f"  {s} {m}: {common.steal_text(h)} | quiet {q['n']}, "
                f"{common.fmt(q['p99'])} / {common.fmt(q['max'])}, {sp['drops']['quiet']} | "
                f"noisy {n['n']}, {common.fmt(n['p99'])} / {common.fmt(n['max'])}, "
                f"{sp['drops']['noisy']} | r {common.fmt(sp['correlation'], 2)}")
    _per_run(lines, summary, setups, methods, "gc",
             f"Python's collector (--gc {args.gc}): collections gen 0/1/2 of all processes, "
             "longest pause (ms); hot-path instances with a collection of their process inside "
             "(of the slowest 1%)", _gc_line)
    lines.append("hot path from the later lidar timer's due time, not its callback's start "
                 "(ms: p50 / p99 / max), and how late that callback started (p50 / max)")
    for s in setups:
        for m in methods:
            h = summary[s][m].get("hot_path_from_due_ms") or {}
            late = summary[s][m].get("lidar_late_ms") or {}
            if h.get("n"):
                lines.append(f"  {s} {m}: {common.fmt_p50_p99_max(h)} | late "
                             f"{common.fmt(late['p50'])} / {common.fmt(late['max'])}")
    _per_run(lines, summary, setups, methods, "hot_executor_from_due",
             "E0 in each instance from the due time (ms, p50 / max): in hot-path callbacks, in "
             "lower-priority ones, outside callbacks; lower-priority callbacks started after "
             "the due time (count: instances); the slowest instance", _breakdown_line)
    _per_run(lines, summary, setups, methods, "hot_executor_from_due",
             "E0's time outside callbacks by its thread's scheduler counters (ms, p50 / p99 / "
             "max): its own CPU, runnable but waiting for its CPU, the rest (asleep, or taken by "
             "the host); waiting for its CPU inside callbacks; means in the 1% of instances with "
             "the most time outside callbacks; callbacks per instance, the CPU time of its "
             "longest gap between them, and its CPU time inside callbacks beyond the number "
             "cruncher's burn (Python's and rclpy's: grown with the rest, the CPU ran slower)",
             _split_line)
    _per_run(lines, summary, setups, methods, "hot_executor_from_due",
             "--cpu-probe: fixed work on E0's thread before each callback, per instance the "
             "median over its callbacks (µs: p50 / p99 / max, the mean in the 1% of instances "
             "with the most time outside callbacks, its correlation with E0's own CPU time "
             "outside callbacks): C (CRC of 16 KiB), Python (a 256-step loop)", _probe_line)
    _per_run(lines, summary, setups, methods, "mt_threads_from_due",
             "MT with one pool of threads, each instance from the due time by what the threads "
             "did (ms, the mean over all instances -> over the slowest 1%; hot callbacks summed, "
             "the two lidar branches may overlap)", threads_bd.thread_line)
    _per_run(lines, summary, setups, methods, "mt_node_overlap_ms",
             "MT with one pool of threads: callbacks of one node running at the same time (ms "
             "over the run, per node; a node's callbacks in one mutually exclusive group never "
             "do)", lambda d: ", ".join(f"{k} {common.fmt(v)}" for k, v in d.items()) or "none")
    _per_run(lines, summary, setups, methods, "analysis",
             "the analysis' bound on the hot path (ms, from the due time; period 100 ms): as "
             "written | + the executor's and Python's cost per callback | + the settings "
             "callback holding E0 through its GPU request (synchronous segments); its inputs; "
             "the maximum observed from the due time", _bound_line)
    _per_run(lines, summary, setups, methods, "later_lidar",
             "which lidar's callback started later (the KPI's start, and its transformer in the "
             "KPI: the rear's holds the TPU segment): instances, hot path p50 / max (ms)",
             lambda d: ", ".join(f"{k} {v['n']}, {common.fmt(v['p50'])} / "
                                 f"{common.fmt(v['max'])}" for k, v in d.items() if v["n"]))
    _per_run(lines, summary, setups, methods, "hot_path_hops_ms",
             "hot path by hop (ms: median / mean of the slowest 1% of instances)",
             lambda hops: ", ".join(f"{k} {common.fmt(v['p50'])} / "
                                    f"{common.fmt(v['slowest_1pct_mean'])}"
                                    for k, v in hops.items()) if hops else None)
    return "\n".join(lines) + "\n"


def _breakdown_line(b: dict) -> str:
    w = b["slowest"]
    return (", ".join(f"{common.fmt(b[k]['p50'])} / {common.fmt(b[k]['max'])}"
                      for k in ("hot_ms", "lower_ms", "outside_ms"))
            + "; " + ", ".join(f"{k}: {v}" for k, v in b["lower_started_histogram"].items())
            + f"; slowest {common.fmt(w['hot_ms'] + w['lower_ms'] + w['outside_ms'])} = "
            f"{common.fmt(w['hot_ms'])} + {common.fmt(w['lower_ms'])} "
            f"({int(w['lower_started'])} started inside) + {common.fmt(w['outside_ms'])}")


def _split_line(b: dict) -> str | None:
    sp = b.get("outside_split")
    if not sp:
        return None
    top = sp["most_outside_1pct"]
    return (", ".join(common.fmt_p50_p99_max(sp[k]) for k in _E0_SPLIT)
            + f" | the 1% with the most ({top['instances']}): {common.fmt(top['outside_ms'])} = "
            + " + ".join(common.fmt(top[k]) for k in _E0_SPLIT[:3])
            + f", inside waiting {common.fmt(top['inside_runq_ms'])}; callbacks "
            f"{common.fmt(sp['callbacks']['p50'])} at the median, "
            f"{common.fmt(top['callbacks'])} there; the longest gap's CPU "
            f"{common.fmt(sp['longest_gap_cpu_ms']['p50'])} at the median, "
            f"{common.fmt(top['longest_gap_cpu_ms'])} there; CPU inside callbacks beyond the "
            f"burn {common.fmt(sp['inside_beyond_burn_ms']['p50'])} at the median, "
            f"{common.fmt(top['inside_beyond_burn_ms'])} there")


def _probe_line(b: dict) -> str | None:
    pr = b.get("cpu_probe")
    if not pr:
        return None
    return ", ".join(
        f"{name} {common.fmt_p50_p99_max(pr[k], 2)}, "
        f"{common.fmt(pr[k]['most_outside_1pct_mean'], 2)} there, r "
        f"{common.fmt(pr[k]['r_outside_cpu'], 2)}"
        for name, k in (("C", "probe_c_us"), ("Python", "probe_py_us")))


def _bound_text(b: dict) -> str:
    over = "" if b["schedulable"] else " (over its period: unschedulable)"
    return f"{common.fmt(b['bound_ms'])}{over}"


def _bound_line(b: dict) -> str:
    return (" | ".join(_bound_text(b[k]) for k in ("as_written", "with_cost",
                                                     "with_cost_sync_blocker"))
            + f"; epsilon {common.fmt(b['epsilon_ms'], 3)}, kappa {b['kappa_ms']:g}, cost "
            f"{common.fmt(b['cost_per_callback_ms'], 2)} per callback, settings request "
            f"{common.fmt(b['settings_request_max_ms'], 2)}; observed "
            f"{common.fmt(b['observed_from_due_max_ms'])}")


def _gc_line(g: dict) -> str:
    h = g.get("hot_path")
    return (common.gc_line(g.get("by_process", {}).values())
            + (f" | {h['during_a_collection']} of {h['instances']} "
               f"({h['slowest_1pct_during_a_collection']} of {h['slowest_1pct']})" if h else ""))


# -- figures ------------------------------------------------------------------------------------


def _labels(setups, methods):
    return [(s, m) for s in setups for m in methods]


def plot_latency(results, setups, methods, path: Path, args) -> None:
    plt = common.pyplot()
    keys = _labels(setups, methods)
    data = [results[k]["latency_ms"] if results[k]["latency_ms"].size else np.array([np.nan])
            for k in keys]
    # beside each, the same instances from the later lidar timer's due time, where recorded
    due = [_from_due(results[k]["latency_ms"], results[k].get("lidar_late_ms")) for k in keys]
    due = [d if d.size else None for d in due]
    pos = np.arange(1, len(keys) + 1, dtype=float)
    paired = any(d is not None for d in due)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.3 * len(keys)), 4))
    parts = ax.boxplot(data, positions=pos - 0.18 if paired else pos, whis=(0, 100),
                       patch_artist=True, widths=0.32 if paired else 0.6)
    for patch, (_s, m) in zip(parts["boxes"], keys):
        patch.set_facecolor(common.COLORS[m])
    boxes = [(pos - 0.18 if paired else pos, data)]
    if paired:
        shown = [(x, d) for x, d in zip(pos + 0.18, due) if d is not None]
        dparts = ax.boxplot([d for _x, d in shown], positions=[x for x, _d in shown],
                            whis=(0, 100), patch_artist=True, widths=0.32)
        for patch, (_s, m) in zip(dparts["boxes"],
                                  [k for k, d in zip(keys, due) if d is not None]):
            patch.set_facecolor(common.COLORS[m])
            patch.set_alpha(0.45)
            patch.set_hatch("//")
        boxes.append(([x for x, _d in shown], [d for _x, d in shown]))
    for xs, ds in boxes:
        for x, d in zip(xs, ds):
            if np.isfinite(d).any():
                ax.text(x, np.nanmax(d), f"{np.nanmax(d):.0f}", ha="center", va="bottom",
                        fontsize=7)
    ax.axhline(hot_path_floor(args), color="k", ls=":", lw=0.8)
    ax.set_xticks(range(1, len(keys) + 1), [f"{s}\n{m}" for s, m in keys], fontsize=8)
    ax.set_ylabel("hot-path latency (ms, log scale)")
    ax.set_yscale("log")
    ax.set_title(f"Case study 2 (x{args.scale:g}, GPU segment {args.scale * args.gpu_ms:g} ms): "
                 "hot-path latency (Fig. 11a)\n"
                 "box 25-75%, whiskers min/max (value on top), dotted = run-time floor"
                 + ("\nhatched: from the later lidar timer's due time, not its callback's start"
                    if paired else ""), fontsize=9)
    common.save(fig, path)


def plot_bp(results, setups, methods, path: Path, args) -> None:
    plt = common.pyplot()
    keys = _labels(setups, methods)
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(keys)), 4))
    data = [results[k]["bp_period_ms"] for k in keys]
    ok = [i for i, d in enumerate(data) if d.size]
    lo, hi = 90.0, 110.0
    if ok:
        parts = ax.violinplot([data[i] for i in ok], positions=[i + 1 for i in ok],
                              showextrema=False, widths=0.8)
        for body, i in zip(parts["bodies"], ok):
            body.set_facecolor(common.COLORS[keys[i][1]])
            body.set_alpha(0.7)
        for i in ok:
            d = data[i]
            p1, p99 = np.percentile(d, [1, 99])
            ax.vlines(i + 1, p1, p99, color="k", lw=1.2)
            ax.scatter([i + 1] * 2, [p1, p99], marker="_", s=80, color="k")
            lo, hi = min(lo, p1), max(hi, p99)
        span = hi - lo
        for i in ok:
            d = data[i]
            ax.text(i + 1, hi + 0.12 * span, f"min {d.min():.0f}\nmax {d.max():.0f}\n"
                    f"|dev| {np.abs(d - 100).mean():.1f}", ha="center", va="center", fontsize=7)
        ax.set_ylim(lo - 0.05 * span, hi + 0.25 * span)
    ax.axhline(100, color="k", ls="--", lw=0.8)
    ax.set_xticks(range(1, len(keys) + 1), [f"{s}\n{m}" for s, m in keys], fontsize=8)
    ax.set_ylabel("behavior-planner period (ms)")
    ax.set_title(f"Case study 2 (x{args.scale:g}): behavior-planner period (Fig. 11b)\n"
                 "dashed = the 100 ms period; bars 1st-99th percentile; |dev| = mean "
                 "|period - 100|", fontsize=9)
    common.save(fig, path)


def plot_drops(results, setups, methods, path: Path, args) -> None:
    plt = common.pyplot()
    keys = _labels(setups, methods)
    top = max([int(results[k]["drops"].max()) if results[k]["drops"].size else 0
               for k in keys] + [1])
    levels = list(range(1, top + 1))
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(keys)), 4))
    w = 0.8 / len(levels)
    cmap = plt.get_cmap("plasma", len(levels) + 1)
    for j, lv in enumerate(levels):
        counts = [int((results[k]["drops"] == lv).sum()) for k in keys]
        xs = np.arange(len(keys)) + (j - (len(levels) - 1) / 2) * w
        ax.bar(xs, [c if c else np.nan for c in counts], w, color=cmap(j),
               label=f"{lv} sample{'s' if lv > 1 else ''} dropped")
    for i, k in enumerate(keys):
        d = results[k]["drops"]
        share = 100.0 * float((d > 0).mean()) if d.size else 0.0
        ax.text(i, 0.93, f"{int(d.sum())} drops\n{share:.1f}% of {d.size}",
                transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylim(0.8, max(10.0, max(r["drops"].size for r in results.values()) * 5))
    ax.set_xlim(-0.6, len(keys) - 0.4)
    ax.set_xticks(range(len(keys)), [f"{s}\n{m}" for s, m in keys], fontsize=8)
    ax.set_ylabel("hot-path instances")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(f"Case study 2 (x{args.scale:g}): dropped samples per hot-path instance "
                 "(Fig. 11c)\ninstances with 1, 2, ... drops; text: total drops, share of "
                 "instances with any", fontsize=9)
    common.save(fig, path)


def _host_panels(results, setups, methods) -> list:
    panels = (common.host_panel(f"{s} {m}", r, r["hot_end_ns"], r["latency_ms"])
              for s in setups for m in methods if (r := results.get((s, m))))
    return [p for p in panels if p is not None]


def load_results(out: Path, setups=None, methods=None):
    """Results of an earlier run read back from its CSV files (``--replot``)."""
    import csv
    hot: dict = {}
    bp: dict = {}
    with common.open_csv(out / "hot_path.csv") as f:
        for r in csv.DictReader(f):  # (lidar_late_ms: since the tenth session; empty: none)
            hot.setdefault((r["setup"], r["method"]), []).append(
                (float(r["latency_ms"]), int(r["drops"]),
                 float(r.get("lidar_late_ms") or "nan")))
    with common.open_csv(out / "bp_period.csv") as f:
        for r in csv.DictReader(f):
            bp.setdefault((r["setup"], r["method"]), []).append(float(r["period_ms"]))
    results = {}
    for k in set(hot) | set(bp):
        a = np.asarray(hot.get(k, []), dtype=np.float64).reshape(-1, 3)
        results[k] = {"latency_ms": a[:, 0], "drops": a[:, 1].astype(np.int64),
                      "lidar_late_ms": a[:, 2],
                      "bp_period_ms": np.asarray(bp.get(k, []), dtype=np.float64)}
    setups = setups or [s for s in SETUPS if any(k[0] == s for k in results)]
    methods = methods or [m for m in common.METHODS if any(k[1] == m for k in results)]
    return results, setups, methods
