"""MT PAAM and PiCAS alternating on one lent H100 (machine D, a contended host) and PAAM with
suspending and spinning clients beside PiCAS on another (machine E, a quiet host): each run's
hot-path p99 and maximum, its drops and the host's steal, from the runs' summary.json.

    python compare.py      # writes compare.txt and fig_alternating.png here
"""
import json
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).parent
MACHINES = {"D": ["p1", "d1", "p2", "d2", "p3", "d3"], "E": ["p1", "w1", "d1", "w2", "p2", "d2"]}
LABEL = {"p": "PAAM", "w": "PAAM, clients spin", "d": "PiCAS"}
COLOR = {"p": "tab:blue", "w": "tab:green", "d": "tab:purple"}


def run(machine: str, name: str) -> dict:
    summary = json.loads((HERE / machine / name / "summary.json").read_text())
    (result,) = summary["results"]["MT"].values()
    return {"p99": result["hot_path_ms"]["p99"], "max": result["hot_path_ms"]["max"],
            "n": result["hot_path_ms"]["n"], "drops": result["drops"]["total"],
            "steal": result["host"]["steal_ms_per_s"]["mean"],
            "busy": result["host"]["busy_ms_per_s"]["mean"] / 1000}


lines = ["machine run  method               n  p99 ms  max ms  drops  steal ms/s  CPUs busy"]
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
for ax, (machine, names) in zip(axes, MACHINES.items()):
    ax2 = ax.twinx()
    for i, name in enumerate(names):
        r = run(machine, name)
        kind = name[0]
        lines.append(f"{machine:7s} {name:4s} {LABEL[kind]:18s} {r['n']:5d}  {r['p99']:6.1f}  "
                     f"{r['max']:6.1f}  {r['drops']:5d}  {r['steal']:10.0f}  {r['busy']:9.2f}")
        ax.bar(i - 0.2, r["p99"], 0.4, color=COLOR[kind], alpha=0.5)
        ax.bar(i + 0.2, r["max"], 0.4, color=COLOR[kind])
        ax.text(i, r["max"] + 2, f"{r['drops']} drops", ha="center", fontsize=7)
        ax2.plot(i, r["steal"], "o", color="tab:red")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([f"{n}\n{LABEL[n[0]]}".replace(", ", ",\n") for n in names], fontsize=7)
    ax.set_title(f"machine {machine}: runs in order (150 s each)", fontsize=9)
    ax2.set_ylim(0, 500)
    ax2.set_ylabel("host's steal, mean ms/s (red dots)", fontsize=8)
axes[0].set_ylim(0, 200)
axes[0].set_ylabel("hot path, ms (light: p99, dark: max)")
fig.suptitle("Case study 2, MT, 2.5 ms GPU segments, H100 (2026-11-25): PAAM's runs and the "
             "host's steal", fontsize=10)
fig.tight_layout()
fig.savefig(HERE / "fig_alternating.png", dpi=110)
text = "\n".join(lines)
(HERE / "compare.txt").write_text(text + "\n")
print(text)
