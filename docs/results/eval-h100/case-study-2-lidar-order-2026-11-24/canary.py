"""Machine G's run: per instance, E0's CPU time outside callbacks and its CPU time inside them
beyond the number cruncher's burn (Python's and rclpy's work, a fixed amount), each per
callback. Run from this folder: python3 canary.py -> canary.txt"""
import csv
import io
import lzma

import numpy as np

rows = list(csv.DictReader(io.TextIOWrapper(lzma.open("g-canary/hot_path.csv.xz"))))


def col(k):
    return np.array([float(r[k]) if r[k] else np.nan for r in rows])


out, beyond, n, lat = (col(k) for k in ("e0_outside_cpu_ms", "e0_inside_beyond_burn_ms",
                                         "e0_callbacks", "latency_ms"))
ok = ~np.isnan(out) & ~np.isnan(beyond) & (n > 0)
po, pi = out[ok] / n[ok], beyond[ok] / n[ok]
top = po >= np.quantile(po, 0.99)
lines = [f"instances {ok.sum()}",
         f"outside callbacks, CPU ms per callback: p50 {np.median(po):.3f}, p99 "
         f"{np.quantile(po, 0.99):.3f}",
         f"inside callbacks beyond the burn, CPU ms per callback: p50 {np.median(pi):.3f}, in the "
         f"1% of instances with the most outside per callback {pi[top].mean():.3f}",
         f"correlation of the two per callback: {np.corrcoef(po, pi)[0, 1]:.2f}",
         f"correlation of the KPI with the CPU time outside callbacks: "
         f"{np.corrcoef(lat[ok], out[ok])[0, 1]:.2f}"]
open("canary.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
