"""Case study 2 at 2.5 ms GPU segments on two lent H100s (twenty-ninth session, 2026-11-25):
each run's hot-path figures, drops and the host's steal (from summary.json), the 10-minute
runs minute by minute (from hot_path.csv.xz and host_stat.csv.xz), and one figure of the two
10-minute runs over time: A's MT PAAM on a quiet host and B's 4ST PAAM on a contended one.

    python compare.py      # writes compare.txt and fig_ten_minutes.png here
"""
import csv
import json
import lzma
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).parent
RUNS = [("A", "t3"), ("A", "m10"), ("A", "p4"), ("B", "q4")]
LONG = [("A", "m10", "MT PAAM, 600 s, machine A (quiet)"),
        ("B", "q4", "4ST PAAM, 600 s, machine B (contended)")]


def rows(path: Path) -> list:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt") as f:
        return list(csv.DictReader(f))


lines = ["machine run  setup method     n  min ms  p99 ms  max ms  drops  steal ms/s mean / max"]
for machine, name in RUNS:
    summary = json.loads((HERE / machine / name / "summary.json").read_text())
    for setup, methods in summary["results"].items():
        for method, r in methods.items():
            hp, steal = r["hot_path_ms"], r["host"]["steal_ms_per_s"]
            lines.append(f"{machine:7s} {name:4s} {setup:5s} {method:6s} {hp['n']:5d}  "
                         f"{hp['min']:6.1f}  {hp['p99']:6.1f}  {hp['max']:6.1f}  "
                         f"{r['drops']['total']:5d}  {steal['mean']:5.0f} / {steal['max']:.0f}")

fig, axes = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
for ax, (machine, name, title) in zip(axes, LONG):
    hot = rows(HERE / machine / name / "hot_path.csv.xz")
    host = rows(HERE / machine / name / "host_stat.csv.xz")
    t = [float(r["t_s"]) for r in hot]
    lat = [float(r["latency_ms"]) for r in hot]
    drops = [int(r["drops"]) for r in hot]
    ts = [float(r["t_s"]) for r in host]
    steal = [float(r["steal_ms"]) for r in host]
    lines.append(f"\n{machine} {name} ({title}) minute by minute: instances, max ms, drops, "
                 "steal ms/s mean")
    for m in range(0, int(max(t)) // 60 + 1):
        sel = [i for i, x in enumerate(t) if m * 60 <= x < (m + 1) * 60]
        st = [s for x, s in zip(ts, steal) if m * 60 <= x < (m + 1) * 60]
        if sel:
            lines.append(f"  minute {m:2d}: {len(sel):4d}  {max(lat[i] for i in sel):6.1f}  "
                         f"{sum(drops[i] for i in sel):4d}  {sum(st) / max(len(st), 1):5.0f}")
    ax.plot(t, lat, ".", ms=1.5, color="tab:blue", label="hot-path latency (ms)")
    dt = [x for x, d in zip(t, drops) if d]
    ax.plot(dt, [lat[i] for i, d in enumerate(drops) if d], "x", ms=4, color="black",
            label=f"instances with drops ({sum(1 for d in drops if d)})")
    ax.set_ylim(60, 130)
    ax.set_ylabel("hot path, ms")
    ax.set_title(title, fontsize=9)
    ax2 = ax.twinx()
    ax2.plot(ts, steal, color="tab:red", alpha=0.5, lw=0.8, label="host's steal (ms/s)")
    ax2.set_ylim(0, 700)
    ax2.set_ylabel("stolen ms per s, all CPUs")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=8)
axes[-1].set_xlabel("seconds into the run")
fig.suptitle("Case study 2, 2.5 ms GPU segments, 10 minutes each, H100 (2026-11-25)",
             fontsize=10)
fig.tight_layout()
fig.savefig(HERE / "fig_ten_minutes.png", dpi=100)
text = "\n".join(lines)
(HERE / "compare.txt").write_text(text + "\n")
print(text)
