"""The result files of a case study 2 run: ``summary.csv``, ``hot_path.csv`` (one row per
hot-path instance), ``bp_period.csv``, ``paam_stages.csv`` (paamd's stages of every recorded
PAAM GPU request), ``host_stat.csv`` (/proc/stat each second), ``system_4st.yaml`` (the 4ST hot
path as the analysis sees it) and ``summary.json``."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from paam_experiments import common
from paam_experiments.case_study2 import e0, graph, threads
from paam_experiments.case_study2.config import Config
from paam_experiments.case_study2.graph import Demand
from paam_experiments.case_study2.kpis import Breakdowns, RunSummary
from paam_experiments.case_study2.placement import Placement
from paam_experiments.case_study2.records import STAGE_NAMES, RunResult, stage_durations
from paam_experiments.case_study2.runner import Runs


@dataclasses.dataclass
class SummaryRow:
    """summary.csv: one row per setup x method."""
    setup: str
    method: str
    instances: int
    hot_min_ms: float
    hot_mean_ms: float
    hot_p99_ms: float
    hot_max_ms: float
    drops_total: int
    instances_with_drops: int
    bp_mean_ms: float
    bp_min_ms: float
    bp_max_ms: float
    bp_std_ms: float

    @classmethod
    def of(cls, setup: str, method: str, s: RunSummary) -> SummaryRow:
        h, b = s.hot_path_ms, s.bp_period_ms
        return cls(setup=setup, method=method, instances=h["n"], hot_min_ms=h["min"],
                   hot_mean_ms=h["mean"], hot_p99_ms=h["p99"], hot_max_ms=h["max"],
                   drops_total=s.drops.total, instances_with_drops=s.drops.instances_with_drops,
                   bp_mean_ms=b["mean"], bp_min_ms=b["min"], bp_max_ms=b["max"],
                   bp_std_ms=b["std"])


def _ms(v: float) -> float | str:
    return "" if np.isnan(v) else round(float(v), 3)


def hot_rows(setup: str, method: str, r: RunResult, bd: Breakdowns) -> list[dict[str, Any]]:
    """hot_path.csv: one row per hot-path instance (t_s from the run's start)."""
    nan = np.full(len(r.latency_ms), np.nan)
    e0_cols = np.column_stack([(bd.e0 or {}).get(k, nan) for k in e0.E0_COLS])
    mt_cols = np.column_stack([(bd.mt or {}).get(k, nan) for k in threads.COLS])
    rows = []
    for e, x, d, st, gap, ph, late, hop, front, e0_row, mt_row in zip(
            r.hot_end_ns, r.latency_ms, r.drops, r.latency_to_start_ms, r.lidar_gap_ms,
            r.lidar_phase_ms, r.lidar_late_ms, r.hops_ms, r.later_front, e0_cols, mt_cols):
        rows.append({"setup": setup, "method": method, "t_s": (int(e) - r.t0_ns) / 1e9,
                     "latency_ms": float(x), "drops": int(d),
                     # the later lidar callback's start after the earlier one's; the lidar
                     # timers' due times apart; the later callback's start after its due time
                     # (empty: not on record)
                     "lidar_gap_ms": round(float(gap), 3), "lidar_phase_ms": _ms(ph),
                     "lidar_late_ms": _ms(late), "later_lidar": "front" if front else "rear",
                     # where the instance was: each hot-path callback's end and the estimator's
                     # start, from the later lidar stamp (a transformer of the earlier lidar may
                     # end before it; empty: not on record)
                     **{f"{n}_end_ms": _ms(h) for n, h in zip(graph.HOT_HOPS, hop)},
                     "ObjectCollisionEstimator_start_ms": round(float(st), 3),
                     # E0 from the due time: busy in hot-path and in lower callbacks, outside
                     # callbacks, lower callbacks started (e0.executor_breakdown)
                     **{f"e0_{k}": _ms(v) for k, v in zip(e0.E0_COLS, e0_row)},
                     # MT with one pool of threads (threads.thread_breakdown)
                     **{f"mt_{k}": _ms(v) for k, v in zip(threads.COLS, mt_row)}})
    return rows


def stage_rows(setup: str, method: str, stages, t0_ns: int) -> list[dict[str, Any]]:
    """paam_stages.csv: one row per recorded PAAM GPU request: when it was submitted (s from the
    run's start, the clock of hot_path.csv's t_s), its chain priority and the duration of each
    stage (us)."""
    prios, d, sub = stage_durations(stages)
    return [{"setup": setup, "method": method, "t_s": round((int(t) - t0_ns) / 1e9, 6),
             "chain_priority": int(p),
             **{f"{n}_us": round(float(x) / 1e3, 1) for n, x in zip(STAGE_NAMES, row)}}
            for p, row, t in zip(prios, d, sub)]


def host_rows(setup: str, method: str, r: RunResult, placement: Placement) -> list[dict]:
    """host_stat.csv: one row per /proc/stat sample of the run (:func:`common.host_rows`, t_s
    on hot_path.csv's clock)."""
    return [{"setup": setup, "method": method, **row}
            for row in common.host_rows(r.host_record(), placement.executor_cpus.values(),
                                        r.t0_ns)]


def write(out: Path, cfg: Config, runs: Runs, summary: dict[str, dict[str, RunSummary]],
          breakdowns: dict[tuple[str, str], Breakdowns], meta: dict[str, Any],
          placement: Placement, demand: Demand) -> None:
    """Every result file but the figures and summary.txt into ``out``."""
    rows, raw_hot, raw_bp, stages, host = [], [], [], [], []
    for (setup, m), r in runs.results.items():
        rows.append(dataclasses.asdict(SummaryRow.of(setup, m, summary[setup][m])))
        raw_hot.extend(hot_rows(setup, m, r, breakdowns[(setup, m)]))
        raw_bp.extend({"setup": setup, "method": m, "period_ms": float(x)}
                      for x in r.bp_period_ms)
        stages.extend(stage_rows(setup, m, r.gpu_stages_ns, r.t0_ns))
        host.extend(host_rows(setup, m, r, placement))
    common.write_csv(out / "summary.csv", rows)
    common.write_csv(out / "hot_path.csv", raw_hot)
    common.write_csv(out / "bp_period.csv", raw_bp)
    if stages:
        common.write_csv(out / "paam_stages.csv", stages)
    paam_4st = summary.get("4ST", {}).get("PAAM")
    b = paam_4st.get("analysis") if paam_4st is not None else None
    if b:
        from paam.analysis.model import dump_yaml
        (out / "system_4st.yaml").write_text(
            "# case study 2's 4ST hot path as the analysis sees it (analysis_spec), epsilon "
            f"measured ({b.epsilon_ms:.3f} ms), kappa {b.kappa_ms} ms.\n"
            "# `paam analyze` on this file gives the bound 'as written' of summary.txt. The\n"
            "# cluster-settings chain is here for the blocking it puts on the hot path: its own\n"
            "# bound leaves out the chains it shares the GPU and E3 with.\n"
            + dump_yaml(b.spec_args.spec()))
    if host:
        common.write_csv(out / "host_stat.csv", host)
    methods = cfg.method_names()
    common.write_json(out / "summary.json", {
        "meta": meta, "params": cfg.params(),
        "direct_wait": common.direct_wait_label(cfg, methods),
        "placement": placement.to_json(), "demand": demand.to_json(),
        "gpu_buckets": graph.GPU_BUCKETS, "server_threads": runs.server_notes,
        "paamd_startup": runs.paamd_startup,
        "hot_path_run_ms": graph.hot_path_floor(cfg.scale, cfg.gpu_ms),
        "results": {s: {m: v.to_json() for m, v in by.items()} for s, by in summary.items()}})
