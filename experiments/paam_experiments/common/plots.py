"""Figures shared by the case studies: a run's latency over time beside what the host stole."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from paam.figures import pyplot, save
from paam_experiments.common.methods import COLORS


def plot_host(panels: list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
              path: Path, title: str, ylabel: str = "hot path (ms)",
              bounds: Sequence[float | None] | None = None) -> None:
    """One panel per run: each instance's latency at its time (dots, left axis) and what the
    host stole from all CPUs in each second (shaded, right axis): whether the slow instances
    fall where the hypervisor took the CPUs away.
    ``panels``: (label, instance t_s, latency ms, sample t_s, steal ms per sample); ``bounds``:
    per panel a latency bound drawn dashed (off scale beyond 1.5x the largest latency: then
    named). A panel's color is its method's: the label, or the label past its first word."""
    plt = pyplot()
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.2 * len(panels) + 0.6),
                             squeeze=False)
    stop = max([float(np.max(p[4])) for p in panels if len(p[4])] + [50.0]) * 1.1
    for i, (ax, (label, ts, lat, ht, steal)) in enumerate(zip(axes[:, 0], panels)):
        ax2 = ax.twinx()
        ax2.fill_between(ht, steal, step="pre", color="#999999", alpha=0.35, lw=0)
        ax2.set_ylim(0, stop)
        ax2.set_ylabel("stolen ms/s", fontsize=8, color="#666666")
        ax.set_zorder(ax2.get_zorder() + 1)
        ax.patch.set_visible(False)
        ax.plot(ts, lat, ".", ms=2,
                color=COLORS.get(label, COLORS.get(label.split(" ", 1)[-1], "#4c9be8")))
        top = float(np.max(lat)) if len(lat) else 1.0
        b = bounds[i] if bounds else None
        if b is not None and math.isfinite(b) and b <= 1.5 * top:
            ax.axhline(b, color=COLORS["bound"], ls="--", lw=0.8)
            top = max(top, b)
        elif bounds:
            ax.text(0.99, 0.95, f"bound {b:.1f} ms (off scale)" if b is not None
                    and math.isfinite(b) else "unbounded",
                    transform=ax.transAxes, ha="right", va="top", fontsize=7)
        ax.set_ylim(0, top * 1.1)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(label, fontsize=8, loc="left")
    axes[-1, 0].set_xlabel("time in the run (s)")
    fig.suptitle(title, fontsize=9)
    save(fig, path)
