"""This folder's runs (rclpy nodes without their default services and QoS event handlers,
code 6d78ff3) beside the eleventh session's (rclpy's default nodes, code 1ed7123,
../case-study-2-e0-bound-2026-11-23): the hot path by the KPI and from the lidar timers' due
time, drops, lidar activations lost, E0's time per instance, and the host's steal. Writes
compare.txt and fig_before_after.png beside this file.

    PYTHONPATH=python python docs/results/eval-h100/case-study-2-lean-nodes-2026-11-24/compare.py
"""
import json
from pathlib import Path

import numpy as np

from paam.eval import common

HERE = Path(__file__).resolve().parent
BEFORE = HERE.parent / "case-study-2-e0-bound-2026-11-23"
# (folder, run, machine): before on machine G, after on machines I (4ST, async) and J (MT, p2b)
RUNS = ([(BEFORE, r, "G") for r in ("p1", "p1b", "c1", "r1", "p2", "p25", "c25", "r25")]
        + [(HERE, r, "I") for r in ("p1", "c1", "r1", "p2", "p25", "c25", "r25", "pa25")]
        + [(HERE, r, "J") for r in ("p2b", "mp25", "mc25", "mr25")])


def load(folder: Path, run: str) -> dict:
    data = json.loads((folder / run / "summary.json").read_text())
    (setup, by_method), = data["results"].items()
    (method, s), = by_method.items()
    lid = s["lidar_samples"]
    e0 = s.get("hot_executor_from_due")
    return {"setup": setup, "method": method, "gpu_ms": data["params"]["gpu_ms"],
            "async": data["params"].get("segments") == "async",
            "n": s["hot_path_ms"]["n"], "kpi": s["hot_path_ms"],
            "due": s["hot_path_from_due_ms"], "drops": s["drops"]["total"],
            "skipped": 2 * lid["expected_each"] - lid["front"] - lid["rear"],
            "steal": s["host"]["steal_ms_per_s"]["mean"],
            "e0": ({k: e0[k]["p50"] for k in ("hot_ms", "lower_ms", "outside_ms")}
                   if e0 else None)}


def main() -> None:
    rows = [["nodes", "machine", "run", "setup", "method", "GPU ms", "steal ms/s", "n", "drops",
             "lidar lost", "KPI p99", "KPI max", "due p50", "due p99", "due max",
             "E0 hot p50", "lower p50", "outside p50"]]
    runs = []
    for folder, run, machine in RUNS:
        r = load(folder, run)
        r.update(nodes="default" if folder == BEFORE else "lean", machine=machine, run=run)
        runs.append(r)
        e0 = r["e0"] or {}
        rows.append([r["nodes"], machine, run, r["setup"],
                     r["method"] + (" async" if r["async"] else ""), f"{r['gpu_ms']:g}",
                     common.fmt(r["steal"]), str(r["n"]), str(r["drops"]),
                     str(max(0, r["skipped"])),
                     common.fmt(r["kpi"]["p99"]), common.fmt(r["kpi"]["max"]),
                     common.fmt(r["due"]["p50"]), common.fmt(r["due"]["p99"]),
                     common.fmt(r["due"]["max"]),
                     *(common.fmt(e0[k]) if k in e0 else "-"
                       for k in ("hot_ms", "lower_ms", "outside_ms"))])
    text = ("Case study 2 on the H100, 150 s per run, reference run times, nice fallback. "
            "nodes: rclpy's defaults (eleventh session, machine G) or the experiments' lean "
            "nodes (paam.ros.create_lean_node; machines I and J). All times in ms. KPI: the "
            "reference system's hot-path latency; due: from the lidar timers' due time; "
            "lidar lost: lidar timer activations that never ran (front + rear); E0 hot / "
            "lower / outside: E0's time in each instance from the due time in hot-path "
            "callbacks, in lower-priority ones and outside callbacks (medians; not recorded in "
            "ROS 2's MT or with awaited segments); steal: what the host took, mean over all "
            "CPUs.\n\n" + common.table(rows, right=range(5, len(rows[0]))) + "\n")
    (HERE / "compare.txt").write_text(text)
    print(text)

    plt = common.pyplot()
    # 4ST, synchronous segments, on a quiet host (p1b and p2b, where the host stole over
    # 200 ms/s, are in the table only): default nodes against lean ones
    keys = [(m, g) for g in (1.0, 2.0, 2.5) for m in ("ROS 2", "PiCAS", "PAAM")]
    keys = [k for k in keys if any((r["method"], r["gpu_ms"]) == k for r in runs)]
    panels = (("E0 outside callbacks, median", lambda r: r["e0"]["outside_ms"] if r["e0"]
               else np.nan),
              ("from the due time, median", lambda r: r["due"]["p50"]),
              ("KPI maximum", lambda r: r["kpi"]["max"]))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    x = np.arange(len(keys))
    for ax, (title, value) in zip(axes, panels):
        for i, nodes in enumerate(("default", "lean")):
            v = []
            for k in keys:
                sel = [value(r) for r in runs if r["nodes"] == nodes and r["setup"] == "4ST"
                       and not r["async"] and r["steal"] < 100
                       and (r["method"], r["gpu_ms"]) == k]
                v.append(sel[0] if sel else np.nan)
            ax.bar(x + (i - 0.5) * 0.4, v, width=0.4, color=("#bbbbbb", "#4c9be8")[i],
                   label=f"{nodes} nodes")
        ax.set_xticks(x, [f"{m}\n{g:g} ms" for m, g in keys], fontsize=7)
        ax.set_title(f"4ST hot path: {title} (ms)", fontsize=10)
        ax.legend(fontsize=8)
    common.save(fig, HERE / "fig_before_after.png")


if __name__ == "__main__":
    main()
