"""MT at 2.5 ms with the shared MultiThreadedPicasExecutor (--mt-executor shared) against the four
partitioned PicasExecutors (the default), 2026-11-25 (thirty-first session), code 1f21b20, on four
lent H100s: A (120 s per run; only the logs came back, in machine-a-logs/), B (d-g, 90 s: the
three methods with the shared executor, and PAAM partitioned), C (h-k, 90 s: PAAM shared and
partitioned alternating), D (l, 450 s of PAAM shared on a noisy host; code 8ae7756, the same
runtime). Prints each run's row (compare.txt): the hot path by the reference
system's KPI (from the later lidar callback's start) and from the lidar timers' due time ("due"),
how late the later lidar's callback started ("late"), and the median of each hop; draws
compare.png (both KPIs).
Run from this folder: python compare.py"""
import json
import lzma
from pathlib import Path

import numpy as np

RUNS = [("B", "d_paam_shared"), ("B", "e_picas_shared"), ("B", "f_ros2"),
        ("B", "g_paam_partitioned"), ("C", "h_paam_shared"), ("C", "i_paam_partitioned"),
        ("C", "j_paam_shared"), ("C", "k_paam_partitioned"), ("D", "l_paam_shared_450s")]
HOPS = ("lidar->transformers", "->fusion", "->ray ground filter", "->cluster detector",
        "->estimator start", "estimator")


def executor(d: dict, method: str) -> str:
    if method == "ROS 2":
        return "rclpy MT"
    return d["params"].get("mt_executor", "partitioned")


def latencies(run: str) -> "tuple[np.ndarray, np.ndarray]":
    """Per instance: the KPI, and the KPI from the due time (+ the later lidar's lateness)."""
    with lzma.open(Path(run) / "hot_path.csv.xz", "rt") as f:
        head = f.readline().strip().split(",")
        lat, late = head.index("latency_ms"), head.index("lidar_late_ms")
        rows = [line.split(",") for line in f if line.strip()]
    kpi = np.array([float(r[lat]) for r in rows])
    return kpi, kpi + np.array([float(r[late]) for r in rows])


rows, data = [], []
print(f"{'machine':7} {'run':20} {'method':6} {'executor':11} {'steal mean/max':>14} "
      f"{'CPUs busy':>9} {'n':>4} {'mean':>6} {'p99':>6} {'max':>6} {'drops':>5} "
      f"{'skipped':>7} {'due p50':>7} {'due p99':>7} {'due max':>7} {'late p50':>8}  "
      "hop medians (ms)")
for machine, run in RUNS:
    d = json.loads((Path(run) / "summary.json").read_text())
    for method, r in d["results"]["MT"].items():
        h, hp = r["host"], r["hot_path_ms"]
        lid = r["lidar_samples"]
        skipped = 2 * lid["expected_each"] - lid["front"] - lid["rear"]
        hops = r["hot_path_hops_ms"]
        due, late = r["hot_path_from_due_ms"], r["lidar_late_ms"]
        hop_text = " ".join(f"{hops[k]['p50']:.1f}" if isinstance(hops.get(k), dict) else "-"
                            for k in HOPS)
        print(f"{machine:7} {run:20} {method:6} {executor(d, method):11} "
              f"{h['steal_ms_per_s']['mean']:6.0f} / {h['steal_ms_per_s']['max']:5.0f} "
              f"{h['busy_ms_per_s']['mean'] / 1000:9.2f} {hp['n']:4d} {hp['mean']:6.1f} "
              f"{hp['p99']:6.1f} {hp['max']:6.1f} {r['drops']['total']:5d} {max(0, skipped):7d} "
              f"{due['p50']:7.1f} {due['p99']:7.1f} {due['max']:7.1f} {late['p50']:8.1f}  "
              f"{hop_text}")
        kpi, from_due = latencies(run)
        data.append((f"{machine}: {run.split('_', 1)[0]} {method}\n{executor(d, method)}",
                     kpi, r["drops"]["total"], from_due))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    raise SystemExit("matplotlib is missing: no figure")
fig, axes = plt.subplots(1, 2, figsize=(14, 5), sharey=True)
labels = [x[0] for x in data]
for ax, idx, title in ((axes[0], 1, "from the later lidar callback's start (the reference "
                        "system's KPI)"),
                       (axes[1], 3, "from the lidar timers' due time")):
    ax.boxplot([x[idx] for x in data], whis=(0, 100), showfliers=False)
    for i, x in enumerate(data, start=1):
        ax.annotate(f"{x[idx].max():.0f}" + (f"\n{x[2]} drops" if idx == 1 else ""),
                    (i, x[idx].max()), textcoords="offset points", xytext=(0, 4),
                    ha="center", fontsize=7)
    ax.axhline(83, color="tab:green", ls="--", lw=1, label="paper's PAAM MT maximum (83 ms)")
    ax.set_yscale("log")
    ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=6, rotation=90)
    ax.set_title(title, fontsize=9)
axes[0].set_ylabel("hot-path latency, ms (log; whiskers: min and max)")
axes[0].legend(fontsize=8, loc="upper right")
fig.suptitle("Case study 2, MT, 2.5 ms segments, H100 (2026-11-25): the shared "
             "MultiThreadedPicasExecutor against four partitioned PicasExecutors", fontsize=10)
fig.tight_layout()
fig.savefig("compare.png", dpi=120)
print("wrote compare.png")
