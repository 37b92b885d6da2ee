"""Case study 1's figures: each chain's maximum against its bound (Fig. 9), the latency
distributions (Fig. 10), and the critical chain's latency over time beside the host's steal."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from paam.figures import pyplot, save
from paam_experiments.case_study1.kpis import Outcome, num
from paam_experiments.case_study1.system import critical_chain
from paam_experiments.common.host import host_panel
from paam_experiments.common.methods import COLORS
from paam_experiments.common.plots import plot_host


def _chains(o: Outcome) -> list:
    return sorted(o.spec.chains, key=lambda c: -c.priority)


def plot_max(o: Outcome, path: Path) -> None:
    """Fig. 9: per chain and method the maximum (bar) and p99, and the two bounds."""
    plt = pyplot()
    chains, methods, summary = _chains(o), o.methods, o.kpis.chains
    x = np.arange(len(chains))
    w = 0.8 / len(methods)
    fig, ax = plt.subplots(figsize=(9, 4))
    for j, m in enumerate(methods):
        xs = x + (j - (len(methods) - 1) / 2) * w
        ax.bar(xs, [summary[c.name][m]["max"] for c in chains], w, color=COLORS[m],
               label=f"{m} max")
        ax.scatter(xs, [summary[c.name][m]["p99"] for c in chains], marker="_", s=120,
                   color="k", zorder=3, label="p99" if j == 0 else None)
    bp = [num(o.bound.plain[c.name]) for c in chains]
    br = [num(o.bound.with_ros[c.name]) for c in chains]
    ax.scatter(x, [b if b is not None else np.nan for b in bp], marker="*", s=110,
               color=COLORS["bound"], zorder=4, label="bound (analysis)")
    ax.scatter(x, [b if b is not None else np.nan for b in br], marker="*", s=70,
               facecolors="none", edgecolors="#d62728", zorder=4, label="bound + rclpy cost")
    ax.set_xticks(x, [c.name + ("\n(BE)" if c.best_effort else "") for c in chains])
    ax.set_ylabel("end-to-end latency (ms)")
    ax.set_yscale("log")
    ax.legend(fontsize=7, ncol=3)
    ax.set_title(f"Case study 1 (times x{o.config.scale:g}): maximum latency per chain (Fig. 9)",
                 fontsize=10)
    save(fig, path)


def plot_dist(o: Outcome, path: Path) -> None:
    """Fig. 10: per chain the latency distribution of each method (whiskers min/max) and its
    bound."""
    plt = pyplot()
    chains, methods, results = _chains(o), o.methods, o.runs.results
    fig, axes = plt.subplots(2, (len(chains) + 1) // 2, figsize=(11, 5.5), squeeze=False)
    for ax, c in zip(axes.flat, chains):
        data = [results[m].latency_ms.get(c.name, np.array([np.nan])) for m in methods]
        data = [d if d.size else np.array([np.nan]) for d in data]
        parts = ax.boxplot(data, whis=(0, 100), patch_artist=True, widths=0.6)
        for patch, m in zip(parts["boxes"], methods):
            patch.set_facecolor(COLORS[m])
        b = num(o.bound.plain[c.name])
        top = max((float(np.nanmax(d)) for d in data if np.isfinite(d).any()), default=1.0)
        if b is not None and b <= 1.5 * top:
            ax.axhline(b, color="k", ls="--", lw=0.8)
            ax.set_ylim(0, max(top, b) * 1.1)
        else:
            ax.set_ylim(0, top * 1.1)
            ax.text(0.98, 0.95, "bound " + (f"{b:.0f} ms" if b is not None else "unbounded")
                    + " (off scale)", transform=ax.transAxes, ha="right", va="top", fontsize=7)
        ax.set_xticks(range(1, len(methods) + 1), methods, fontsize=7)
        ax.set_title(c.name + (" (BE)" if c.best_effort else ""), fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(chains):]:
        ax.axis("off")
    fig.suptitle(f"Case study 1 (times x{o.config.scale:g}): latency distributions (Fig. 10), "
                 "ms; whiskers min/max, dashed = bound", fontsize=10)
    save(fig, path)


def host_panels(o: Outcome, chain: str) -> list:
    """plot_host's panels: per sampled run, ``chain``'s instances and the steal, in s from the
    run's start."""
    panels = []
    for m in o.methods:
        r = o.runs.results[m]
        if r.host is None:
            continue
        p = host_panel(m, r.host, r.end_ns.get(chain, np.zeros(0, np.int64)),
                       r.latency_ms.get(chain, np.zeros(0)), t0_ns=r.t0_ns)
        if p is not None:
            panels.append(p)
    return panels


def draw(o: Outcome, out: Path) -> list[str]:
    """Every figure into ``out``; returns the files written."""
    plot_max(o, out / "fig9_max_latency.png")
    plot_dist(o, out / "fig10_distributions.png")
    files = ["fig9_max_latency.png", "fig10_distributions.png"]
    top = critical_chain(o.spec)
    panels = host_panels(o, top.name) if top is not None else []
    if panels:
        plot_host(panels, out / "fig10b_host_steal.png",
                  f"Case study 1 (times x{o.config.scale:g}): {top.name}'s latency over "
                  "time (dashed: its bound), and what the host stole from the CPUs",
                  ylabel=f"{top.name} (ms)",
                  bounds=[num(o.bound.plain[top.name])] * len(panels))
        files += ["host_stat.csv", "fig10b_host_steal.png"]
    return files
