"""The KPIs of one setup x method as the reference system computes them, and what explains
them: :class:`RunSummary`, one run's entry in summary.json.

* hot-path latency: end of ObjectCollisionEstimator's callback - the later of the two lidar
  stamps in its sample (and, beside it, from the later lidar timer's due time);
* hot-path drops: per hot-path instance, the missing samples the hot-path nodes recorded;
* behavior-planner period: time between the starts of consecutive BehaviorPlanner timer
  callbacks (set to 100 ms).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from paam_experiments import common
from paam_experiments.case_study2 import bounds, e0, graph, threads
from paam_experiments.case_study2.config import Config
from paam_experiments.case_study2.placement import Placement
from paam_experiments.case_study2.records import (STAGE_NAMES, RunResult, due_ns,
                                                  stage_durations)

HOP_NAMES = ("lidar->transformers", "->fusion", "->ray ground filter", "->cluster detector",
             "->estimator start", "estimator")


@dataclasses.dataclass
class Breakdowns:
    """Per hot-path instance, where its time from the due time went (columns by name, NaN where
    not on record): on E0's thread (:func:`.e0.executor_breakdown`) and in MT's pool of threads
    (:func:`.threads.thread_breakdown`); None where the run has no such record."""
    e0: dict[str, np.ndarray] | None
    mt: dict[str, np.ndarray] | None


def breakdowns(r: RunResult) -> Breakdowns:
    return Breakdowns(e0=e0.executor_breakdown(r),
                      mt=threads.thread_breakdown(r, due_ns(r), graph.HOT_PRIORITY,
                                                  graph.HOT_IDS))


@dataclasses.dataclass
class DropCounts:
    total: int
    instances_with_drops: int
    max_per_instance: int
    mean_per_instance: float
    histogram: dict[str, int]  # drops -> instances


@dataclasses.dataclass
class LidarSamples:
    front: int
    rear: int
    expected_each: int


_ABSENT = object()  # (an optional key summary.json leaves out)


@dataclasses.dataclass
class RunSummary:
    """One setup x method's KPIs and explanations; :meth:`to_json` is its summary.json entry
    (summaries of values are :func:`common.summarize`'s)."""
    hot_path_ms: dict[str, float]
    bp_period_ms: dict[str, float]
    hot_path_to_estimator_start_ms: dict[str, float]
    drops: DropCounts
    drops_by_subscription: dict[str, int]
    lidar_samples: LidarSamples
    rt: list[str]
    thread_cpus: dict[str, dict[str, int]]
    cpu_beyond_burn_ms: dict[str, float]
    gpu_segment_wall_ms: dict[str, float]
    paam_gpu_stages_ms: dict[str, dict[str, float]]
    paam_gpu_request_ms_by_chain_priority: dict[str, dict[str, float]]
    hot_path_hops_ms: dict[str, dict[str, float]]
    later_lidar: dict[str, dict[str, float]]
    lidar_gap_ms: dict[str, float]
    lidar_phase_ms: dict[str, float]
    lidar_late_ms: dict[str, float]
    # the hot path from the later lidar timer's due time: the KPI above starts at its
    # callback's start, as the reference system's does, and leaves its lateness out
    hot_path_from_due_ms: dict[str, float]
    host: dict[str, Any]
    hot_path_by_host_steal: Any  # dict, or _ABSENT where the host was not sampled
    gc: dict[str, Any]
    python_switch_interval_ms: float
    hot_executor_from_due: dict[str, Any] | None
    mt_threads_from_due: dict[str, Any] | None
    mt_node_overlap_ms: Any = _ABSENT  # dict where MT's pool of threads was on record
    analysis: Any = _ABSENT  # AnalysisBounds or None for 4ST PAAM

    def to_json(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is _ABSENT:
                continue
            out[f.name] = (dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v)
        return out

    def get(self, name: str) -> Any:
        """Field ``name``, None where absent."""
        v = getattr(self, name)
        return None if v is _ABSENT else v


def summarize_run(setup: str, method: str, r: RunResult, bd: Breakdowns, cfg: Config,
                  placement: Placement) -> RunSummary:
    lat, drops = r.latency_ms, r.drops
    late = r.lidar_late_ms
    host = _host_summary(r, placement)
    s = RunSummary(
        hot_path_ms=common.summarize(lat), bp_period_ms=common.summarize(r.bp_period_ms),
        hot_path_to_estimator_start_ms=common.summarize(r.latency_to_start_ms),
        drops=DropCounts(
            total=int(drops.sum()), instances_with_drops=int((drops > 0).sum()),
            max_per_instance=int(drops.max()) if drops.size else 0,
            mean_per_instance=float(drops.mean()) if drops.size else float("nan"),
            histogram={str(int(k)): int(v) for k, v in
                       zip(*np.unique(drops, return_counts=True))}),
        drops_by_subscription=r.sub_drops,
        lidar_samples=LidarSamples(front=r.published[0], rear=r.published[1],
                                   expected_each=int(cfg.duration * 1e3 // 100)),
        rt=r.rt, thread_cpus=r.threads,
        cpu_beyond_burn_ms=common.summarize(r.excess_ms),
        gpu_segment_wall_ms=common.summarize(r.gpu_segment_ms),
        paam_gpu_stages_ms=stage_summary(r.gpu_stages_ns),
        paam_gpu_request_ms_by_chain_priority=request_by_priority(r.gpu_stages_ns),
        hot_path_hops_ms=hop_summary(lat, r.hops_ms, r.latency_to_start_ms),
        later_lidar=later_lidar(lat, r.later_front),
        lidar_gap_ms=common.summarize(r.lidar_gap_ms),
        lidar_phase_ms=common.summarize(r.lidar_phase_ms[~np.isnan(r.lidar_phase_ms)]),
        lidar_late_ms=common.summarize(late[~np.isnan(late)]),
        hot_path_from_due_ms=common.summarize(from_due(lat, late)),
        host=host["host"], hot_path_by_host_steal=host.get("hot_path_by_host_steal", _ABSENT),
        gc=gc_summary(r), python_switch_interval_ms=r.switch_interval_ms,
        hot_executor_from_due=e0.breakdown_summary(bd.e0),
        mt_threads_from_due=threads.thread_summary(bd.mt, lat + late))
    if r.mt_calls_ns is not None:
        s.mt_node_overlap_ms = threads.node_overlaps(r.mt_calls_ns,
                                                     [n.name for n in graph.SYSTEM])
    if setup == "4ST" and method == "PAAM":
        s.analysis = bounds.analysis_bounds(r, cfg.gpu_ms, cfg.tpu_ms, cfg.scale, cfg.backend,
                                            placement.executor_cpus, bd.e0)
        if s.analysis:
            s.analysis.observed_from_due_max_ms = s.hot_path_from_due_ms["max"]
    return s


def request_by_priority(stages) -> dict[str, dict[str, float]]:
    """Whole PAAM GPU requests (submitted -> client woken, ms) per chain priority."""
    prios, d, _ = stage_durations(stages)
    total = d.sum(axis=1) / 1e6 if d.size else np.zeros(0)
    return {str(int(p)): common.summarize(total[prios == p])
            for p in sorted(set(prios.tolist()), reverse=True)}


def stage_summary(stages) -> dict[str, dict[str, float]]:
    """Per-stage durations (ms) of the PAAM GPU requests."""
    d = stage_durations(stages)[1]
    return {n: common.summarize(d[:, i] / 1e6) for i, n in enumerate(STAGE_NAMES)}


def later_lidar(lat: np.ndarray, front: np.ndarray) -> dict[str, dict[str, float]]:
    """The hot path split by which lidar's callback started later. Both timers fall due
    together and have the same PiCAS priority, so the order is the executor's tie-break: the
    PicasExecutor's follows the order the nodes were added, rclpy's executors' can change from
    run to run or instance to instance. The KPI, from the later callback, counts that lidar's
    transformer and not the other's, whose lengths differ (the rear's holds the TPU segment)."""
    lat, front = np.asarray(lat, dtype=np.float64), np.asarray(front, dtype=bool)
    return {k: common.summarize(lat[m]) for k, m in (("front", front), ("rear", ~front))}


def hop_summary(lat, hops, oce_start) -> dict[str, dict[str, float]]:
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
            for i, n in enumerate(HOP_NAMES)}


def from_due(latency_ms: np.ndarray, late_ms: np.ndarray | None) -> np.ndarray:
    """The hot path from the later lidar timer's due time: the KPI plus how late that lidar's
    callback started, for the instances where that is on record."""
    if late_ms is None:
        return np.zeros(0)
    ok = ~np.isnan(late_ms)
    return latency_ms[ok] + late_ms[ok]


def gc_summary(r: RunResult) -> dict[str, Any]:
    """Python's collector in a run: per process its collections and longest pause, and the
    hot-path instances with a collection of the process that runs the hot path inside them
    (all of them, and of the slowest 1%)."""
    out: dict = {"by_process": {p: common.gc_summary(a) for p, a in r.gc_ns.items()}}
    hot_ex = {e.name for e in graph.EXECUTORS if set(e.nodes) & set(graph.HOT_PATH)}
    procs = [p for p in r.gc_ns if hot_ex & set(p.split("+"))]
    if len(procs) != 1 or not len(r.latency_ms):
        return out
    end, lat = r.hot_end_ns, r.latency_ms
    c, hit = common.gc_instances(end, lat, r.gc_ns[procs[0]])
    slow = lat >= np.percentile(lat, 99)
    out["hot_path"] = {"process": procs[0], **c, "slowest_1pct": int(slow.sum()),
                       "slowest_1pct_during_a_collection": int((slow & hit).sum())}
    return out


def _host_summary(r: RunResult, placement: Placement) -> dict[str, Any]:
    """What the host took from the CPUs during the run (/proc/stat each second, summed over all
    CPUs and over the executors' cores), and the hot path apart for the instances it left
    alone (:func:`common.split_by_steal`)."""
    rec = r.host_record()
    host = common.host_summary(rec, placement.executor_cpus.values())
    if "error" in host:
        return {"host": host}
    lat, drops = r.latency_ms, r.drops
    around = common.steal_around(r.hot_end_ns, lat, rec["host_t_ns"], rec["host_steal_ms"])
    split = common.split_by_steal(lat, around)
    q = split["quiet_steal_ms"]  # (NaN, no sample near: in neither)
    split["drops"] = {"quiet": int(drops[around <= q].sum()), "noisy": int(drops[around > q].sum())}
    return {"host": host, "hot_path_by_host_steal": split}
