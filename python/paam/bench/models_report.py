"""``paam bench models``: the statistics, the table, the small summary and the figure, from the
results the runs collected (:mod:`paam.bench.models`). No GPU, no torch: tested with fake data.

A method's results::

    {"hp_alone": [ms, ...], "lp_alone_img_s": float,
     "points": {"1": {"hp": [ms, ...], "lp_img_s": float}, "2": ..., "4": ...},
     "notes": [...]}                     # or {"skipped": "why"}, or with "error": "what failed"

The HP latency of a point is compared with the same method's HP alone (p99 / p99 alone), and
the LP throughput of all its LP processes together with one LP process of that method alone
(no HP): what the LP side keeps.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

TARGET_P99_RATIO = 1.10   # the issue's target: HP p99 at most 1.10x standalone ...
TARGET_LP_SHARE = 0.80    # ... while LP keeps at least 80% of its throughput
METHOD_TITLES = {
    "paam": "one paamd, priority streams (2 buckets)",
    "paam-preempt": "the same, LP requests held back while HP has work (--gpu-preempt)",
    "paam-serial": "the same, the LP bucket on one lane (--be-lanes 1)",
    "direct": "a CUDA context per process (the driver's time-slicing)",
    "inproc": "one process, torch stream priorities (the reference)",
    "mps": "a context per process through an MPS server",
}


def lat_stats(values: Sequence[float]) -> dict[str, float]:
    """count, mean, p50, p99, max of latencies (ms)."""
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return {"n": 0}
    return {"n": int(a.size), "mean": float(a.mean()), "p50": float(np.percentile(a, 50)),
            "p99": float(np.percentile(a, 99)), "max": float(a.max())}


def derive(method: dict[str, Any]) -> dict[str, Any]:
    """The figures of one method: HP alone, and per LP count the HP statistics, the p99 ratio
    and the LP share. Skipped or failed methods keep their reason."""
    if "skipped" in method:
        return {"skipped": method["skipped"]}
    out: dict[str, Any] = {}
    if method.get("error"):
        out["error"] = method["error"]
    alone = lat_stats(method.get("hp_alone", []))
    out["hp_alone_ms"] = alone
    lp_alone = method.get("lp_alone_img_s")
    out["lp_alone_img_s"] = lp_alone
    points = {}
    for n, p in sorted(method.get("points", {}).items(), key=lambda kv: int(kv[0])):
        s = lat_stats(p.get("hp", []))
        d: dict[str, Any] = {"hp_ms": s, "lp_img_s": p.get("lp_img_s")}
        if s.get("n") and alone.get("n"):
            d["p99_ratio"] = s["p99"] / alone["p99"]
            d["p50_ratio"] = s["p50"] / alone["p50"]
        if lp_alone and p.get("lp_img_s") is not None:
            d["lp_share"] = p["lp_img_s"] / lp_alone
        points[str(n)] = d
    out["points"] = points
    if method.get("notes"):
        out["notes"] = list(method["notes"])
    return out


def meets_target(point: dict[str, Any]) -> bool:
    return (point.get("p99_ratio", float("inf")) <= TARGET_P99_RATIO
            and point.get("lp_share", 0.0) >= TARGET_LP_SHARE)


def _f(x: Any, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def table(derived: dict[str, dict[str, Any]], header: str) -> str:
    """The Markdown table: one row per method and LP count (0: HP alone)."""
    lines = [header, "",
             "| method | LP procs | HP p50 ms | HP p99 ms | HP max ms | p99 / alone | LP img/s | LP / alone | target |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, d in derived.items():
        if "skipped" in d:
            lines.append(f"| {name} | — | skipped: {d['skipped']} | | | | | | |")
            continue
        a = d["hp_alone_ms"]
        if a.get("n"):
            lines.append(f"| {name} | 0 | {a['p50']:.2f} | {a['p99']:.2f} | {a['max']:.2f} | 1.00 | "
                         f"{_f(d.get('lp_alone_img_s'), '.0f')} (LP alone) | | |")
        for n, p in d["points"].items():
            s = p["hp_ms"]
            if not s.get("n"):
                continue
            lines.append(f"| {name} | {n} | {s['p50']:.2f} | {s['p99']:.2f} | {s['max']:.2f} | "
                         f"{_f(p.get('p99_ratio'), '.2f')}x | {_f(p.get('lp_img_s'), '.0f')} | "
                         f"{_f(p.get('lp_share') and 100 * p['lp_share'], '.0f')}% | "
                         f"{'yes' if meets_target(p) else 'no'} |")
        if d.get("error"):
            lines.append(f"| {name} | | failed: {d['error'].splitlines()[0][:160]} | | | | | | |")
    lines += ["", f"target: HP p99 ≤ {TARGET_P99_RATIO:.2f}x its standalone p99 while LP keeps "
              f"≥ {100 * TARGET_LP_SHARE:.0f}% of its standalone throughput; methods: "
              + "; ".join(f"{name}: {METHOD_TITLES.get(name, name)}" for name in derived)]
    return "\n".join(lines)


def summary(payload: dict[str, Any], derived: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The small summary for docs/results/: the figures without the raw series."""
    keep = ("command", "date", "machine", "code_commit", "config", "models", "lp_kernels")
    out = {"experiment": "paam bench models", **{k: payload[k] for k in keep if k in payload}}
    out["raw_data"] = {"commit": payload.get("code_commit", ""), "paths": ["results/models/models.json"],
                       "note": "raw per-request latencies: models.json in the bench's --out folder"}
    out["results"] = {}
    for name, d in derived.items():
        if "skipped" in d:
            out["results"][name] = {"skipped": d["skipped"]}
            continue
        r: dict[str, Any] = {"hp_alone_ms": _round(d["hp_alone_ms"]), "lp_alone_img_s": _round(d["lp_alone_img_s"])}
        r["points"] = {n: {"hp_ms": _round(p["hp_ms"]), "p99_ratio": _round(p.get("p99_ratio")),
                           "lp_img_s": _round(p.get("lp_img_s")), "lp_share": _round(p.get("lp_share")),
                           "meets_target": meets_target(p)} for n, p in d["points"].items()}
        for k in ("error", "notes"):
            if d.get(k):
                r[k] = d[k]
        out["results"][name] = r
    return out


def _round(x: Any) -> Any:
    if isinstance(x, float):
        return round(x, 3)
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    return x


def plot(derived: dict[str, dict[str, Any]], path: Path, title: str) -> bool:
    """HP p99 / alone (left) and LP throughput / alone (right) per method against the LP count.
    False when there is nothing to draw."""
    from paam import figures
    series = {name: d for name, d in derived.items() if "skipped" not in d and d.get("points")}
    if not series:
        return False
    plt = figures.pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for name, d in series.items():
        ns = [int(n) for n, p in d["points"].items() if "p99_ratio" in p]
        ax1.plot(ns, [d["points"][str(n)]["p99_ratio"] for n in ns], "o-", label=name)
        ns = [int(n) for n, p in d["points"].items() if "lp_share" in p]
        ax2.plot(ns, [100 * d["points"][str(n)]["lp_share"] for n in ns], "o-", label=name)
    ax1.axhline(TARGET_P99_RATIO, color="gray", ls="--", lw=1, label=f"target {TARGET_P99_RATIO:.2f}x")
    ax2.axhline(100 * TARGET_LP_SHARE, color="gray", ls="--", lw=1, label=f"target {100 * TARGET_LP_SHARE:.0f}%")
    ax1.set_ylabel("HP p99 / HP alone p99")
    ax2.set_ylabel("LP throughput, % of one LP alone")
    for ax in (ax1, ax2):
        ax.set_xlabel("low-priority processes")
        ax.set_xticks(sorted({int(n) for d in series.values() for n in d["points"]}))
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    figures.save(fig, path, dpi=120)
    return True
