"""MT PAAM at 2.5 ms on the shared MultiThreadedPicasExecutor with and without threads kept for
the hot path (--mt-hot-threads K: the first K threads, E0's core first, run only the hot path's
callbacks), 2026-11-25 (thirty-second session), code d230866, on three lent H100s: M1 (K = 1, 0,
2, 90 s each, in that order), M2 (K = 0 for 600 s, then K = 2, 0, 2, 0 at 90 s each) and M3
(code e85236e: K = 2 with the hot path's GPU bucket on two lanes, --hot-lanes 2, and on one,
alternating, 90 s each). Also from paam_stages.csv, which is not kept (too large): the share of
hot-path GPU requests that waited over 1 ms for their bucket's worker, and their device time.
Prints each run's row (compare.txt): the hot path by the reference system's KPI (from the later
lidar callback's start) and from the lidar timers' due time ("due"), the median of each hop and
the mean of the slowest 1% of instances for the first hop (lidar -> both transformers done);
draws compare.png.
Run from this folder: python compare.py"""
import json
import lzma
from pathlib import Path

import numpy as np

RUNS = ["m1_k1", "m1_k0", "m1_k2", "m2_k0_600s", "m2_k2_b", "m2_k0_b", "m2_k2_c", "m2_k0_c",
        "m3_k2_lanes2_a", "m3_k2_a", "m3_k2_lanes2_b", "m3_k2_b"]
# from each run's paam_stages.csv (chain priority 100): % waiting > 1 ms between dequeued and
# picked; device time p50 / p90 (us)
STAGES = {"m2_k0_600s": (10.8, None, None), "m2_k2_b": (10.9, None, None),
          "m2_k0_b": (11.2, None, None),
          "m3_k2_lanes2_a": (1.2, 2589, 5089), "m3_k2_a": (12.7, 2584, 2595),
          "m3_k2_lanes2_b": (1.8, 2591, 5091), "m3_k2_b": (13.4, 2581, 2590)}
HOPS = ("lidar->transformers", "->fusion", "->ray ground filter", "->cluster detector",
        "->estimator start", "estimator")


def kpi(run: str) -> np.ndarray:
    with lzma.open(Path(run) / "hot_path.csv.xz", "rt") as f:
        head = f.readline().strip().split(",")
        lat = head.index("latency_ms")
        return np.array([float(line.split(",")[lat]) for line in f if line.strip()])


print(f"{'run':14} {'K':>1} {'L':>1} {'s':>4} {'steal mean/max':>14} {'n':>5} {'mean':>6} "
      f"{'p99':>6} {'max':>6} {'drops':>5} {'due p99':>7} {'due max':>7} {'BP std':>6} "
      f"{'l->t slow1%':>11}  hop medians (ms)")
data = []
for run in RUNS:
    d = json.loads((Path(run) / "summary.json").read_text())
    k = d["params"].get("mt_hot_threads", 0)
    lanes = d["params"].get("hot_lanes", 1)
    r = d["results"]["MT"]["PAAM"]
    h, hp, due = r["host"], r["hot_path_ms"], r["hot_path_from_due_ms"]
    hops = r["hot_path_hops_ms"]
    print(f"{run:14} {k:1d} {lanes:1d} {d['params']['duration']:4.0f} "
          f"{h['steal_ms_per_s']['mean']:6.0f} / {h['steal_ms_per_s']['max']:5.0f} "
          f"{hp['n']:5d} {hp['mean']:6.1f} {hp['p99']:6.1f} {hp['max']:6.1f} "
          f"{r['drops']['total']:5d} {due['p99']:7.1f} {due['max']:7.1f} "
          f"{r['bp_period_ms']['std']:6.1f} "
          f"{hops['lidar->transformers']['slowest_1pct_mean']:11.1f}  "
          + " ".join(f"{hops[x]['p50']:.1f}" for x in HOPS))
    data.append((f"{run.split('_')[0].upper()} K={k}" + (f" L={lanes}" if lanes > 1 else "")
                 + f"\n{d['params']['duration']:.0f} s", kpi(run), k))
for k in (0, 2):
    rows = [x for x in data if x[2] == k and not x[0].endswith("600 s") and "L=" not in x[0]
            and not x[0].startswith("M3")]
    print(f"K={k}, the 90 s runs on M1 and M2: max " + ", ".join(f"{x[1].max():.1f}" for x in rows)
          + "; p99 " + ", ".join(f"{np.percentile(x[1], 99):.1f}" for x in rows))

print("hot-path GPU requests (chain priority 100): waited > 1 ms for the bucket's worker, "
      "device time p50 / p90 (us)")
for run, (wait, p50, p90) in STAGES.items():
    print(f"  {run:14} {wait:5.1f}%" + (f"  {p50} / {p90}" if p50 else ""))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    raise SystemExit("matplotlib is missing: no figure")
fig, ax = plt.subplots(figsize=(13, 4.8))
colors = {0: "tab:gray", 1: "tab:orange", 2: "tab:blue"}
box = ax.boxplot([x[1] for x in data], whis=(0, 100), showfliers=False, patch_artist=True)
for patch, x in zip(box["boxes"], data):
    patch.set_facecolor(colors[x[2]])
    if "L=" in x[0]:
        patch.set_hatch("//")
for i, x in enumerate(data, start=1):
    ax.annotate(f"{x[1].max():.1f}", (i, x[1].max()), textcoords="offset points",
                xytext=(0, 4), ha="center", fontsize=8)
ax.axhline(83, color="tab:green", ls="--", lw=1, label="paper's PAAM MT maximum (83 ms)")
ax.set_xticks(range(1, len(data) + 1), [x[0] for x in data], fontsize=8)
ax.set_ylabel("hot-path latency, ms (whiskers: min and max)")
ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c, label=f"K = {k} hot-path threads")
                   for k, c in colors.items()]
          + [plt.Line2D([], [], color="tab:green", ls="--", label="paper's 83 ms")],
          fontsize=8, loc="upper left")
ax.set_title("Case study 2, MT PAAM, shared MultiThreadedPicasExecutor, 2.5 ms segments, H100 "
             "(2026-11-25): threads kept for the hot path (K), the hot bucket on two lanes (L=2, "
             "hatched); no drop in any run", fontsize=9)
fig.tight_layout()
fig.savefig("compare.png", dpi=120)
print("wrote compare.png")
