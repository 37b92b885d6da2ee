"""Do the hot path's GPU requests make mt3's slowest PAAM instances slow?

For every hot-path instance (hot_path.csv.xz): its eight GPU requests at the hot path's chain
priority submitted after the later lidar's start (paam_stages.csv.xz), and the time they took
beyond their 2.5 ms each (submission to the client's wake-up less 2.5 ms, summed). Compares the
slowest 1% of instances with the median one.

    python docs/results/eval-h100/mt-shared-s33-2026-11-25/slow_instances.py
"""
import csv
import lzma
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent / "mt3"
STAGES = ["submitted->dequeued_us", "dequeued->picked_us", "picked->device_start_us",
          "device_start->device_end_us", "device_end->completed_us", "completed->woken_us"]


def rows(name):
    with lzma.open(HERE / name, "rt") as f:
        return [r for r in csv.DictReader(f) if r["method"] == "PAAM"]


hot = rows("hot_path.csv.xz")
req = [r for r in rows("paam_stages.csv.xz") if r["chain_priority"] == "100"]
t = np.array([float(r["t_s"]) for r in req])
order = np.argsort(t)
t = t[order]
took = (np.array([[float(r[k]) for k in STAGES] for r in req])[order] / 1e3).sum(axis=1)
per = []
for r in hot:
    i = np.searchsorted(t, float(r["t_s"]) - 0.001)
    per.append((float(r["latency_ms"]), (took[i:i + 8] - 2.5).sum()))
a = np.array(per)
slow = a[a[:, 0] >= np.percentile(a[:, 0], 99)]
print(f"{len(a)} instances; median: KPI {np.median(a[:, 0]):.1f} ms, its requests beyond 2.5 ms each "
      f"{np.median(a[:, 1]):.2f} ms in total")
print(f"slowest 1% ({len(slow)}): KPI {slow[:, 0].mean():.1f} ms on average, requests beyond 2.5 ms each "
      f"{slow[:, 1].mean():.2f} ms; correlation KPI ~ requests' excess {np.corrcoef(a[:, 0], a[:, 1])[0, 1]:.2f}")
