"""Which lidar's callback started later, run by run, and what it did to the KPI (the hot path
from the later lidar callback's start). Runs before 2026-11-24's later_lidar column are read
from the two transformers' end times (the later lidar's transformer ends later). The 17th and
18th sessions' runs are MT or 4ST at 2.5 ms, the others 4ST at 2 ms (F: 2.5 ms). Run from this
folder: python3 order.py -> fig_order.png, order.txt"""
import csv
import io
import lzma

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

NAP = "../case-study-2-nap-long-2026-11-24/"
Q = "../case-study-2-150s-2026-11-24/"
RUNS = [(Q + "m150", "PAAM", "MT PAAM 150 s (17th)"),
        (Q + "m150", "PiCAS", "MT PiCAS 150 s (17th)"),
        (Q + "m150b", "PAAM", "MT PAAM 150 s (17th, 2)"),
        (Q + "s150-4st", "PAAM", "4ST PAAM 150 s (17th)"),
        (Q + "s150-4st", "PiCAS", "4ST PiCAS 150 s (17th)"),
        (Q + "p600-4st", "PAAM", "4ST PAAM 600 s (18th)"),
        (NAP + "a-nap", "PAAM", "A nap 600 s"), (NAP + "a-spin", "PAAM", "A spin 600 s"),
        (NAP + "c-spin", "PAAM", "C spin 600 s"), (NAP + "c-nap", "PAAM", "C nap 600 s"),
        ("d-spin", "PAAM", "D spin 300 s"), ("d-nap", "PAAM", "D nap 300 s"),
        ("e-spin", "PAAM", "E spin 300 s"), ("f-three", "PiCAS", "F PiCAS 150 s*"),
        ("f-three", "PAAM", "F PAAM 150 s*")]


def later_front(rows):
    if "later_lidar" in rows[0]:
        return np.array([r["later_lidar"] == "front" for r in rows])
    return np.array([float(r["PointsTransformerFront_end_ms"] or "nan")
                     > float(r["PointsTransformerRear_end_ms"] or "nan") for r in rows])


lines = ["run: instances with the front / the rear lidar later; KPI p50 (ms) with each"
         " (* after the fix: nodes in the order they were added)"]
fig, ax = plt.subplots(figsize=(11, 4.4))
for i, (folder, method, label) in enumerate(RUNS):
    rows = [r for r in csv.DictReader(io.TextIOWrapper(lzma.open(folder + "/hot_path.csv.xz")))
            if r["method"] == method]
    lat = np.array([float(r["latency_ms"]) for r in rows])
    front = later_front(rows)
    p = [f"{np.median(lat[m]):.1f}" if m.any() else "-" for m in (front, ~front)]
    lines.append(f"  {label:24s} {front.sum():5d} / {(~front).sum():5d}; p50 {p[0]} / {p[1]}")
    for m, color in ((front, "tab:blue"), (~front, "tab:orange")):
        if m.sum() >= 20:
            v = ax.violinplot(np.clip(lat[m], None, 130), [i], widths=0.8, showextrema=False)
            for body in v["bodies"]:
                body.set_facecolor(color)
                body.set_alpha(0.45)
        if m.any():
            ax.scatter([i], [np.median(lat[m])], color=color, s=14, zorder=3)
ax.set_xticks(range(len(RUNS)), [r[2] for r in RUNS], rotation=30, ha="right", fontsize=8)
ax.set_ylabel("hot path, KPI (ms; clipped at 130)")
ax.set_title("Case study 2 (4ST and MT), H100, 2026-11-24: the KPI by which lidar started later "
             "(blue front, orange rear; dots: medians)", fontsize=9)
fig.tight_layout()
fig.savefig("fig_order.png", dpi=110)
open("order.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
