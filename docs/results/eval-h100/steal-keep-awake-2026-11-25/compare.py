"""The nine MT runs of 2026-11-25 (thirtieth session) side by side, a-f on one lent H100 (machine
A), g-i on a second (B): what the host stole during each, how busy the guest was, and the hot
path. Run from this folder: python compare.py"""
import json
from pathlib import Path

RUNS = ["a_paam", "b_picas", "c_picas_ka", "d_picas_ka", "e_paam", "f_picas",
        "g_paam", "h_picas_ka", "i_picas"]
print(f"{'run':11} {'method':6} {'keep-awake':10} {'steal mean/max':>14} {'executors':>9} "
      f"{'CPUs busy':>9} {'n':>4} {'p99':>6} {'max':>6} {'drops':>5}")
for run in RUNS:
    d = json.loads((Path(run) / "summary.json").read_text())
    for method, r in d["results"]["MT"].items():
        h, hp = r["host"], r["hot_path_ms"]
        steal, ex = h["steal_ms_per_s"], h["steal_ms_per_s_executor_cpus"]
        print(f"{run:11} {method:6} {'yes' if d['params']['keep_awake'] else 'no':10} "
              f"{steal['mean']:6.0f} / {steal['max']:5.0f} {ex['mean']:9.0f} "
              f"{h['busy_ms_per_s']['mean'] / 1000:9.2f} {hp['n']:4d} {hp['p99']:6.1f} "
              f"{hp['max']:6.1f} {r['drops']['total']:5d}")
