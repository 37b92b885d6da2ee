"""The eighteenth session's long case-study-2 runs side by side: hot-path latency over time with
the instances that had a drop marked, beside what the host stole (all CPUs), and the drops split
by the steal around each instance. Run from this folder: python3 compare.py
-> fig_long.png, compare.txt"""
import csv
import io
import lzma

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

RUNS = [("pmt", "MT, 2.5 ms segments, PAAM, 600 s (machine Z)"),
        ("rmt", "MT, 2.5 ms segments, ROS 2, 600 s (machine Z)"),
        ("p4st2", "4ST, 2 ms segments, PAAM, 600 s (machine Q)"),
        ("pmt2", "MT, 2 ms segments, PAAM, 420 s (machine Q)")]
BINS = [(0, 50), (50, 200), (200, 1e9)]  # ms stolen per s, the most in the seconds around one



def columns(f):
    """The numeric columns of a CSV file, by name."""
    rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) for r in rows]) for k in ("t_s", "latency_ms", "drops",
                                                                "steal_ms") if k in rows[0]}


fig, axes = plt.subplots(len(RUNS), 1, figsize=(10, 2.3 * len(RUNS)), sharex=True)
lines = ["hot path by the steal around each instance (the most ms/s the host stole from all CPUs"
         " in the seconds it spans, +-1 s): instances, drops, max ms"]
for ax, (run, title) in zip(axes, RUNS):
    hp = columns(io.TextIOWrapper(lzma.open(f"{run}/hot_path.csv.xz")))
    hs = columns(open(f"{run}/host_stat.csv"))
    t, steal = hs["t_s"], hs["steal_ms"]
    lat, end = hp["latency_ms"], hp["t_s"]
    lo = np.clip(np.searchsorted(t, end - lat / 1e3) - 1, 0, len(t) - 1)
    hi = np.clip(np.searchsorted(t, end) + 1, 0, len(t) - 1)
    around = np.array([steal[a:b + 1].max() for a, b in zip(lo, hi)])
    drop = hp["drops"] > 0
    ax2 = ax.twinx()
    ax2.fill_between(t, steal, step="mid", color="0.85", lw=0)
    ax2.set_ylabel("stolen ms/s", color="0.5", fontsize=8)
    ax2.set_ylim(0, max(1100, steal.max() * 1.05))
    ax.set_zorder(ax2.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.plot(end, lat, ".", ms=1.5, color="tab:blue", label="hot path")
    ax.plot(end[drop], lat[drop], "x", ms=4, color="tab:red",
            label=f"instance with a drop ({drop.sum()})")
    ax.set_ylabel("hot path (ms)", fontsize=8)
    ax.set_ylim(0, max(250, lat.max() * 1.05))
    ax.set_title(title, fontsize=9, loc="left")
    ax.legend(loc="upper right", fontsize=7)
    parts = []
    for a, b in BINS:
        m = (around > a) & (around <= b) if a else around <= b
        mx = f"{lat[m].max():.1f}" if m.any() else "n/a"
        parts.append(f"{'<=' + str(b) if not a else (f'{a}-{b}' if b < 1e9 else f'>{a}')}:"
                     f" {m.sum()}, {int(drop[m].sum())}, {mx}")
    lines.append(f"  {run:6s} steal mean {steal.mean():.0f} ms/s | " + " | ".join(parts))
axes[-1].set_xlabel("time in the run (s)")
fig.suptitle("Case study 2 at length, H100, 2026-11-24: hot path and what the host stole",
             fontsize=10)
fig.tight_layout()
fig.savefig("fig_long.png", dpi=110)
open("compare.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
