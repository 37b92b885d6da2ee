"""The reference system's spec: its 24 nodes, their run times, wiring and chain priorities, and
the executors of the 4ST setup (the Autoware reference system, ``autoware_reference_system``).

Nothing here runs anything: the executor processes build the graph from :data:`SYSTEM`, the
C++ E0 writes its spec from it, the KPIs and the analysis read its names and priorities.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

SETUPS = ("4ST", "MT")


@dataclasses.dataclass(frozen=True)
class NodeSpec:
    name: str
    kind: str            # sensor | transform | fusion | cyclic | intersection | command
    inputs: tuple = ()   # input topics
    outputs: tuple = ()  # output topics (intersection: one per connection); default: own name
    period_ms: float = 0.0
    run_ms: tuple = ()   # CPU run time per callback kind (see the constants below)


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
HOT_EXECUTOR = "E0"
TPU_NODE = "PointsTransformerRear"
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
# the GPU paamd's buckets: one per chain priority
GPU_BUCKETS = len(set(CHAIN_PRIORITY.values()) | set(CONNECTION_PRIORITY.values()))


class ExecutorSpec(NamedTuple):
    """A 4ST executor: its name, its CPU on the paper's machine, its OS priority, its nodes."""
    name: str
    cpu: int
    priority: int
    nodes: tuple[str, ...]


# 4ST: the hot path together on E0.
EXECUTORS = (
    ExecutorSpec("E0", 2, 90, ("FrontLidarDriver", "RearLidarDriver", "PointsTransformerFront",
                               "PointsTransformerRear", "PointCloudFusion", "RayGroundFilter",
                               "EuclideanClusterDetector", "ObjectCollisionEstimator")),
    ExecutorSpec("E1", 3, 85, ("BehaviorPlanner", "MPCController", "VehicleInterface",
                               "VehicleDBWSystem", "Lanelet2Map", "Lanelet2MapLoader",
                               "ParkingPlanner", "LanePlanner")),
    ExecutorSpec("E2", 4, 80, ("PointCloudMap", "PointCloudMapLoader", "VoxelGridDownsampler",
                               "NDTLocalizer")),
    ExecutorSpec("E3", 5, 75, ("Visualizer", "Lanelet2GlobalPlanner", "EuclideanClusterSettings",
                               "IntersectionOutput")),
)
EXECUTOR_PRIORITIES = {e.name: e.priority for e in EXECUTORS}
EXECUTOR_OF = {n: e.name for e in EXECUTORS for n in e.nodes}


def producer(topic: str) -> str:
    """The node that publishes ``topic``."""
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
            ins = [d.get(producer(t)) for t in n.inputs]
            ins = [x for x in ins if x is not None]
            if ins:
                d[n.name] = max(d.get(n.name, 0), max(ins) + 1)
    return d


def callback_priority(node: str, index: int = 0) -> tuple[int, int]:
    """(chain priority, PiCAS callback priority) of callback ``index`` of ``node``."""
    chain = CONNECTION_PRIORITY.get((node, index), CHAIN_PRIORITY[node])
    return chain, chain * 100 + depths()[node]


def executor_ceiling(node: str) -> int:
    """The most critical chain priority among the callbacks of ``node``'s executor (the 4ST
    partition, which MT's PicasExecutors share): what ``--request-priority executor`` gives
    every GPU request made on that executor."""
    for e in EXECUTORS:
        if node in e.nodes:
            return max(callback_priority(n, i)[0] for n in e.nodes
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


def hot_subscription(key: str) -> bool:
    """Whether subscription ``key`` ("Node<-topic") lies on the hot path."""
    node, _, topic = key.partition("<-")
    return node in HOT_PATH and topic in HOT_PATH


def hot_path_floor(scale: float, gpu_ms: float) -> float:
    """The least a hot-path instance can take (ms): from the later lidar stamp, that lidar's
    own callback, one points transformer, the fusing callback, ray ground filter, cluster
    detector and collision estimator, each its run time and GPU segment (``gpu_ms`` before
    ``scale``). That is the front lidar's floor; an instance the rear lidar starts also counts
    TPU_NODE's TPU segment (paam_experiments.history._floor adds it per run)."""
    runs = (SENSOR + TRANSFORM + FUSE + 3 * TRANSFORM) * scale
    return runs + 6 * gpu_ms * scale


@dataclasses.dataclass
class ExecutorDemand:
    cpu_ms_per_s: float
    gpu_ms_per_s: float


@dataclasses.dataclass
class Demand:
    """The CPU and device time the system asks for per second (ms/s), per 4ST executor and
    accelerator, and its callbacks per second."""
    executors: dict[str, ExecutorDemand]
    gpu_ms_per_s: float
    tpu_ms_per_s: float
    callbacks_per_s: float

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def demand(gpu_ms: float, tpu_ms: float, scale: float) -> Demand:
    """Rates of every callback from the periods, and the CPU and device time they ask for per
    second (ms/s) per 4ST executor and accelerator (segments ``gpu_ms``, ``tpu_ms`` as run)."""
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
    executors = {}
    for e in EXECUTORS:
        cpu = sum(r * ms for nn in e.nodes for r, ms, _g in calls[nn]) * scale
        gpu = sum(r * gpu_ms for nn in e.nodes for r, _ms, g in calls[nn] if g)
        executors[e.name] = ExecutorDemand(cpu_ms_per_s=cpu, gpu_ms_per_s=gpu)
    return Demand(executors=executors,
                  gpu_ms_per_s=sum(e.gpu_ms_per_s for e in executors.values()),
                  tpu_ms_per_s=rate["RearLidarDriver"] * tpu_ms,
                  callbacks_per_s=sum(r for v in calls.values() for r, _m, _g in v))
