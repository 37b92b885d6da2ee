"""The analysis' view of the 4ST hot path (``paam analyze``'s SystemSpec) and its bound, with
the inputs a PAAM run measured (epsilon, the executor's own cost, the settings request)."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from paam_experiments import common
from paam_experiments.case_study2 import graph
from paam_experiments.case_study2.records import STAGE_NAMES, RunResult, stage_durations

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
        if node == graph.TPU_NODE:
            segs.append(Segment("tpu0", tpu_ms * scale))
        return Callback(name=f"{node}.{index}", executor=executor,
                        wcet=graph.BY_NAME[node].run_ms[index] * scale + extra_cpu_ms + more_ms,
                        segments=segs)

    ex_of, hot_ex = graph.EXECUTOR_OF, graph.HOT_EXECUTOR
    return SystemSpec(
        accelerators={"gpu0": Accelerator("gpu0", buckets=buckets, overhead=epsilon,
                                          preemption=kappa),
                      "tpu0": Accelerator("tpu0", buckets=1, overhead=epsilon)},
        executors={e.name: Executor(e.name, cpu=executor_cpus[e.name], priority=e.priority)
                   for e in graph.EXECUTORS},
        chains=[Chain(HOT_CHAIN, graph.HOT_PRIORITY, graph.BY_NAME["FrontLidarDriver"].period_ms,
                      [cb(n, i, hot_ex) for n, i in HOT_CALLBACKS]),
                Chain(SETTINGS_CHAIN, graph.SETTINGS_PRIORITY,
                      graph.BY_NAME["EuclideanClusterSettings"].period_ms,
                      [cb("EuclideanClusterSettings", 0, ex_of["EuclideanClusterSettings"]),
                       cb("EuclideanClusterDetector", 1, hot_ex, blocker_request_ms),
                       cb("IntersectionOutput", 0, ex_of["IntersectionOutput"])],
                      best_effort=True)])


@dataclasses.dataclass
class HotPathBound:
    """The hot path's bound (ms, from the lidar timers' due time) and its parts; the blocking
    term is the lower callback's CPU time (ANALYSIS.md as written)."""
    bound_ms: float
    schedulable: bool
    blocking_ms: float
    cpu_ms: float
    accelerators_ms: Any   # the analysis' handling time per accelerator
    period_ms: float


def hot_path_bound(spec) -> HotPathBound:
    """The hot path's bound in ``spec`` (an :func:`analysis_spec`)."""
    from paam.analysis.bounds import analyze
    c = analyze(spec, stop_at_deadline=False).chain(HOT_CHAIN)
    return HotPathBound(bound_ms=c.wcrt, schedulable=c.schedulable, blocking_ms=c.blocking,
                        cpu_ms=c.own_cpu, accelerators_ms=c.handling, period_ms=c.period)


@dataclasses.dataclass
class SpecArgs:
    """:func:`analysis_spec`'s arguments for a run (segments before ``scale``)."""
    gpu_ms: float
    tpu_ms: float
    scale: float
    executor_cpus: dict[str, int]
    buckets: int
    epsilon: float
    kappa: float

    def spec(self, extra_cpu_ms: float = 0.0, blocker_request_ms: float = 0.0):
        return analysis_spec(**dataclasses.asdict(self), extra_cpu_ms=extra_cpu_ms,
                             blocker_request_ms=blocker_request_ms)


@dataclasses.dataclass
class AnalysisBounds:
    """The hot path's bound for a PAAM run, three ways, and the measured inputs (ms)."""
    spec_args: SpecArgs
    epsilon_ms: float                 # the largest server overhead of a hot-path GPU request
    kappa_ms: float
    cost_per_callback_ms: float       # cpu_beyond_burn_max_ms + outside_per_callback_max_ms
    cpu_beyond_burn_max_ms: float
    outside_per_callback_max_ms: float
    settings_request_max_ms: float
    as_written: HotPathBound          # the declared run times
    with_cost: HotPathBound           # + the cost per callback
    with_cost_sync_blocker: HotPathBound  # + the settings callback holding E0 in its request
    observed_from_due_max_ms: float | None = None  # the run's slowest instance from the due time

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def analysis_bounds(r: RunResult, gpu_ms: float, tpu_ms: float, scale: float, backend: str,
                    executor_cpus: dict[str, int], e0: dict | None) -> AnalysisBounds | None:
    """The analysis' bound on the 4ST hot path for a PAAM run (ms, from the timers' due time),
    with what the run measured of its inputs: epsilon, the largest server overhead of a
    hot-path GPU request (its stages less the device's); the executor's and Python's own cost
    per callback, the largest CPU time beyond a callback's burn plus the largest time per
    hot-path callback E0 spent outside its callbacks in an instance (``e0``:
    :func:`.e0.executor_breakdown`); and the largest settings request (submitted -> woken).
    Three bounds: as written (declared run times), with that cost, and with the settings
    callback holding E0 through its request (synchronous segments; awaited ones release E0
    meanwhile). None without a hot-path GPU request on record."""
    prios, d, _ = stage_durations(r.gpu_stages_ns)
    hot = prios == graph.HOT_PRIORITY
    if not hot.any():
        return None
    dev = STAGE_NAMES.index("device_start->device_end")
    eps = float((d[hot].sum(axis=1) - d[hot, dev]).max()) / 1e6
    settings = prios == graph.SETTINGS_PRIORITY
    blocker = float(d[settings].sum(axis=1).max()) / 1e6 if settings.any() else 0.0
    beyond = max(0.0, max(r.excess_ms)) if len(r.excess_ms) else 0.0
    outside = (float(np.nanmax(e0["outside_ms"])) / len(HOT_CALLBACKS)
               if e0 is not None and not np.isnan(e0["outside_ms"]).all() else 0.0)
    cost = beyond + outside
    kappa = common.default_kappa(backend)
    args = SpecArgs(gpu_ms=gpu_ms, tpu_ms=tpu_ms, scale=scale, executor_cpus=executor_cpus,
                    buckets=graph.GPU_BUCKETS, epsilon=eps, kappa=kappa)
    return AnalysisBounds(
        spec_args=args, epsilon_ms=eps, kappa_ms=kappa, cost_per_callback_ms=cost,
        cpu_beyond_burn_max_ms=beyond, outside_per_callback_max_ms=outside,
        settings_request_max_ms=blocker, as_written=hot_path_bound(args.spec()),
        with_cost=hot_path_bound(args.spec(extra_cpu_ms=cost)),
        with_cost_sync_blocker=hot_path_bound(args.spec(extra_cpu_ms=cost,
                                                        blocker_request_ms=blocker)))
