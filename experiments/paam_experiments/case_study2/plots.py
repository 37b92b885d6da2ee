"""The case study's figures: ``fig11a_hot_path_latency.png``, ``fig11b_bp_period.png``,
``fig11c_drops.png`` and ``fig11d_host_steal.png`` (hot-path latency over time beside what the
host stole from the CPUs); ``--replot`` draws the first three again from the CSV files of
earlier runs."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from paam_experiments import common
from paam_experiments.case_study2 import graph
from paam_experiments.case_study2.kpis import from_due
from paam_experiments.case_study2.records import RunResult

# (setup, method name) -> its result
Results = dict[tuple[str, str], RunResult]




def _labels(setups: list[str], methods: list[str]) -> list[tuple[str, str]]:
    return [(s, m) for s in setups for m in methods]


def plot_latency(results: Results, setups: list[str], methods: list[str], path: Path,
                 scale: float, gpu_ms: float) -> None:
    """Fig. 11a: hot-path latency per setup x method, and from the due time beside it."""
    plt = common.pyplot()
    keys = _labels(setups, methods)
    data = [results[k].latency_ms if results[k].latency_ms.size else np.array([np.nan])
            for k in keys]
    # beside each, the same instances from the later lidar timer's due time, where recorded
    due = [from_due(results[k].latency_ms, results[k].lidar_late_ms) for k in keys]
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
    ax.axhline(graph.hot_path_floor(scale, gpu_ms), color="k", ls=":", lw=0.8)
    ax.set_xticks(range(1, len(keys) + 1), [f"{s}\n{m}" for s, m in keys], fontsize=8)
    ax.set_ylabel("hot-path latency (ms, log scale)")
    ax.set_yscale("log")
    ax.set_title(f"Case study 2 (x{scale:g}, GPU segment {scale * gpu_ms:g} ms): "
                 "hot-path latency (Fig. 11a)\n"
                 "box 25-75%, whiskers min/max (value on top), dotted = run-time floor"
                 + ("\nhatched: from the later lidar timer's due time, not its callback's start"
                    if paired else ""), fontsize=9)
    common.save(fig, path)


def plot_bp(results: Results, setups: list[str], methods: list[str], path: Path,
            scale: float) -> None:
    """Fig. 11b: the behavior planner's period per setup x method."""
    plt = common.pyplot()
    keys = _labels(setups, methods)
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(keys)), 4))
    data = [results[k].bp_period_ms for k in keys]
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
    ax.set_title(f"Case study 2 (x{scale:g}): behavior-planner period (Fig. 11b)\n"
                 "dashed = the 100 ms period; bars 1st-99th percentile; |dev| = mean "
                 "|period - 100|", fontsize=9)
    common.save(fig, path)


def plot_drops(results: Results, setups: list[str], methods: list[str], path: Path,
               scale: float) -> None:
    """Fig. 11c: hot-path instances by their dropped samples per setup x method."""
    plt = common.pyplot()
    keys = _labels(setups, methods)
    top = max([int(results[k].drops.max()) if results[k].drops.size else 0
               for k in keys] + [1])
    levels = list(range(1, top + 1))
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(keys)), 4))
    w = 0.8 / len(levels)
    cmap = plt.get_cmap("plasma", len(levels) + 1)
    for j, lv in enumerate(levels):
        counts = [int((results[k].drops == lv).sum()) for k in keys]
        xs = np.arange(len(keys)) + (j - (len(levels) - 1) / 2) * w
        ax.bar(xs, [c if c else np.nan for c in counts], w, color=cmap(j),
               label=f"{lv} sample{'s' if lv > 1 else ''} dropped")
    for i, k in enumerate(keys):
        d = results[k].drops
        share = 100.0 * float((d > 0).mean()) if d.size else 0.0
        ax.text(i, 0.93, f"{int(d.sum())} drops\n{share:.1f}% of {d.size}",
                transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylim(0.8, max(10.0, max(r.drops.size for r in results.values()) * 5))
    ax.set_xlim(-0.6, len(keys) - 0.4)
    ax.set_xticks(range(len(keys)), [f"{s}\n{m}" for s, m in keys], fontsize=8)
    ax.set_ylabel("hot-path instances")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(f"Case study 2 (x{scale:g}): dropped samples per hot-path instance "
                 "(Fig. 11c)\ninstances with 1, 2, ... drops; text: total drops, share of "
                 "instances with any", fontsize=9)
    common.save(fig, path)


def draw(results: Results, setups: list[str], methods: list[str], out: Path, scale: float,
         gpu_ms: float) -> None:
    """Figs. 11a-c into ``out``."""
    plot_latency(results, setups, methods, out / "fig11a_hot_path_latency.png", scale, gpu_ms)
    plot_bp(results, setups, methods, out / "fig11b_bp_period.png", scale)
    plot_drops(results, setups, methods, out / "fig11c_drops.png", scale)


def draw_host(results: Results, setups: list[str], methods: list[str], path: Path,
              scale: float, gpu_ms: float) -> bool:
    """Fig. 11d: each run's hot-path latency over time beside the host's steal; False where no
    run sampled the host."""
    panels = (common.host_panel(f"{s} {m}", r.host_record(), r.hot_end_ns, r.latency_ms)
              for s in setups for m in methods if (r := results.get((s, m))))
    panels = [p for p in panels if p is not None]
    if panels:
        common.plot_host(panels, path,
                         f"Case study 2 (x{scale:g}, GPU segment {scale * gpu_ms:g} ms): "
                         "hot-path latency over time, and what the host stole from the CPUs")
    return bool(panels)


def load_results(out: Path) -> Results:
    """Results of an earlier run read back from its CSV files (``--replot``): the instances'
    latency, drops and lateness (empty where the file has none), the behavior planner's
    periods."""
    import csv
    hot: dict = {}
    bp: dict = {}
    with common.open_csv(out / "hot_path.csv") as f:
        for r in csv.DictReader(f):
            hot.setdefault((r["setup"], r["method"]), []).append(
                (float(r["latency_ms"]), int(r["drops"]),
                 float(r.get("lidar_late_ms") or "nan")))
    with common.open_csv(out / "bp_period.csv") as f:
        for r in csv.DictReader(f):
            bp.setdefault((r["setup"], r["method"]), []).append(float(r["period_ms"]))
    results = {}
    for k in set(hot) | set(bp):
        a = np.asarray(hot.get(k, []), dtype=np.float64).reshape(-1, 3)
        results[k] = RunResult(latency_ms=a[:, 0], drops=a[:, 1].astype(np.int64),
                               lidar_late_ms=a[:, 2],
                               bp_period_ms=np.asarray(bp.get(k, []), dtype=np.float64))
    return results


def replot(out: Path, inputs: list[Path]) -> None:
    """Figs. 11a-c of the runs in ``inputs`` (result folders; a setup x method in several: the
    last wins) drawn together into ``out``."""
    params = [json.loads((d / "summary.json").read_text())["params"] for d in inputs]
    if len({(p["scale"], p["gpu_ms"]) for p in params}) > 1:
        raise SystemExit("--inputs: the runs differ in --scale or --gpu-ms")
    results: Results = {}
    for d in inputs:
        results.update(load_results(d))
    setups = [s for s in graph.SETUPS if any(k[0] == s for k in results)]
    methods = [m for m in common.METHODS if any(k[1] == m for k in results)]
    for s in setups:  # a run that did not cover every setup x method: draw it empty
        for m in methods:
            results.setdefault((s, m), RunResult())
    draw(results, setups, methods, out, params[0]["scale"], params[0]["gpu_ms"])
