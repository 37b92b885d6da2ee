"""Long case-study-2 runs side by side: hot-path latency over time with the instances that had a
drop marked, beside what the host stole (all CPUs), and the drops split by the steal around each
instance. Each run is a folder with hot_path.csv.xz and host_stat.csv (or host_stat.csv.xz).

  python3 compare.py                     # the eighteenth session's four runs (run in this folder)
  python3 compare.py --out DIR/fig_long --title T DIR/run=LABEL ...   # any others

-> <out>.png and compare.txt beside it (default: fig_long.png, compare.txt here)."""
import argparse
import csv
import io
import lzma
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

RUNS = [("pmt", "MT, 2.5 ms segments, PAAM, 600 s (machine Z)"),
        ("rmt", "MT, 2.5 ms segments, ROS 2, 600 s (machine Z)"),
        ("p4st2", "4ST, 2 ms segments, PAAM, 600 s (machine Q)"),
        ("pmt2", "MT, 2 ms segments, PAAM, 420 s (machine Q)")]
TITLE = "Case study 2 at length, H100, 2026-11-24: hot path and what the host stole"
BINS = [(0, 50), (50, 200), (200, 1e9)]  # ms stolen per s, the most in the seconds around one

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("runs", nargs="*", metavar="DIR=LABEL", help="run folders (default: this folder's)")
ap.add_argument("--out", default="fig_long", help="figure path without .png")
ap.add_argument("--title", default=TITLE)
args = ap.parse_args()
if args.runs:
    RUNS = [tuple(r.split("=", 1)) if "=" in r else (r, r) for r in args.runs]


def columns(f):
    """The numeric columns of a CSV file, by name."""
    rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) for r in rows]) for k in ("t_s", "latency_ms", "drops",
                                                                "steal_ms") if k in rows[0]}


def text(path):
    """A CSV file, or its .xz beside it."""
    if os.path.exists(path):
        return open(path)
    return io.TextIOWrapper(lzma.open(path + ".xz"))


fig, axes = plt.subplots(len(RUNS), 1, figsize=(10, 2.3 * len(RUNS)), sharex=True)
lines = ["hot path by the steal around each instance (the most ms/s the host stole from all CPUs"
         " in the seconds it spans, +-1 s): instances, drops, max ms"]
for ax, (run, title) in zip(axes, RUNS):
    hp = columns(text(f"{run}/hot_path.csv"))
    hs = columns(text(f"{run}/host_stat.csv"))
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
    lines.append(f"  {os.path.basename(run):6s} steal mean {steal.mean():.0f} ms/s | " + " | ".join(parts))
axes[-1].set_xlabel("time in the run (s)")
fig.suptitle(args.title, fontsize=10)
fig.tight_layout()
fig.savefig(args.out + ".png", dpi=110)
with open(os.path.join(os.path.dirname(args.out), "compare.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
