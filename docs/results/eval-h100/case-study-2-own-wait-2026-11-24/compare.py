"""This folder's runs (the PicasExecutor's own wait, code 75e9385) beside the twelfth session's
(lean nodes, the PicasExecutor waiting through rclpy; ../case-study-2-lean-nodes-2026-11-24,
machine I), and the same-machine pairs with ``--executor-wait rclpy`` (p25r, p2r, mp25r): the
hot path by the KPI and from the lidar timers' due time, drops, E0's time outside callbacks, and
the host's steal. Writes compare.txt and fig_own_wait.png beside this file.

    PYTHONPATH=python python docs/results/eval-h100/case-study-2-own-wait-2026-11-24/compare.py
"""
import importlib.util
import json
from pathlib import Path

import numpy as np

from paam.eval import common

HERE = Path(__file__).resolve().parent
LEAN = HERE.parent / "case-study-2-lean-nodes-2026-11-24"
_spec = importlib.util.spec_from_file_location("lean_compare", LEAN / "compare.py")
_lean = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_lean)

# (folder, run, machine): the twelfth session's quiet 4ST runs on I; this session's on L (4ST)
# and M (MT)
RUNS = ([(LEAN, r, "I") for r in ("p1", "p2", "p25", "c25", "r25")]
        + [(HERE, r, "L") for r in ("p1", "p2", "p2r", "p25", "p25r", "c25", "r25")]
        + [(HERE, r, "M") for r in ("mp25", "mp25r", "mc25", "mr25")]
        + [(HERE, r, "N") for r in ("q25", "q25r", "q25rb", "q25b")])
# (own wait, rclpy's wait, label, machine)
PAIRS = (("p2", "p2r", "4ST 2 ms", "L"), ("p25", "p25r", "4ST 2.5 ms", "L"),
         ("q25", "q25r", "4ST 2.5 ms", "N"), ("q25b", "q25rb", "4ST 2.5 ms", "N"),
         ("mp25", "mp25r", "MT 2.5 ms", "M"))


def load(folder: Path, run: str) -> dict:
    r = _lean.load(folder, run)
    data = json.loads((folder / run / "summary.json").read_text())
    r["wait"] = data["params"].get("executor_wait", "rclpy")  # before it: always rclpy's
    (by_method,) = data["results"].values()
    (s,) = by_method.values()
    e0 = s.get("hot_executor_from_due")
    r["outside_max"] = e0["outside_ms"]["max"] if e0 else None
    return r


def main() -> None:
    rows = [["machine", "run", "setup", "method", "wait", "GPU ms", "steal ms/s", "n", "drops",
             "lidar lost", "KPI p99", "KPI max", "due p50", "due p99", "due max",
             "E0 outside p50", "outside max"]]
    runs = {}
    for folder, run, machine in RUNS:
        r = load(folder, run)
        r.update(machine=machine, run=run)
        runs[(machine, run)] = r
        e0 = r["e0"] or {}
        rows.append([machine, run, r["setup"], r["method"], r["wait"] if r["method"] != "ROS 2"
                     else "-", f"{r['gpu_ms']:g}", common.fmt(r["steal"]), str(r["n"]),
                     str(r["drops"]), str(max(0, r["skipped"])), common.fmt(r["kpi"]["p99"]),
                     common.fmt(r["kpi"]["max"]), common.fmt(r["due"]["p50"]),
                     common.fmt(r["due"]["p99"]), common.fmt(r["due"]["max"]),
                     common.fmt(e0["outside_ms"]) if e0 else "-",
                     common.fmt(r["outside_max"]) if r["outside_max"] is not None else "-"])
    text = ("Case study 2 on the H100, 150 s per run, reference run times, lean nodes, nice "
            "fallback. wait: how the PicasExecutor waited for work (own: paam.ros._readiness; "
            "rclpy: _wait_for_ready_callbacks, as on machine I). Machines I (twelfth session), "
            "L, M and N (thirteenth). All times in ms. KPI: the reference system's hot-path "
            "latency; due: from the lidar timers' due time; lidar lost: lidar timer activations "
            "that never ran; E0 outside: E0's time outside callbacks in each instance (median "
            "and maximum; not recorded in ROS 2's MT); steal: what the host took, mean over all "
            "CPUs.\n\n" + common.table(rows, right=range(5, len(rows[0]))) + "\n")
    (HERE / "compare.txt").write_text(text)
    print(text)

    plt = common.pyplot()
    panels = (("E0 outside callbacks, median", lambda r: r["e0"]["outside_ms"]),
              ("E0 outside callbacks, max", lambda r: r["outside_max"]),
              ("KPI maximum", lambda r: r["kpi"]["max"]),
              ("drops", lambda r: r["drops"]))
    fig, axes = plt.subplots(2, 2, figsize=(13, 8))
    x = np.arange(len(PAIRS))
    for ax, (title, value) in zip(axes.flat, panels):
        for i, pick in enumerate((1, 0)):  # rclpy's wait first, then the own one
            v = [value(runs[(p[3], p[pick])]) for p in PAIRS]
            ax.bar(x + (i - 0.5) * 0.4, v, width=0.4, color=("#bbbbbb", "#4c9be8")[i],
                   label=("rclpy's wait", "own wait")[i])
        ax.set_xticks(x, [f"{p[2]}, {p[3]}\n{p[1]} / {p[0]}\n(steal "
                          f"{runs[(p[3], p[1])]['steal']:.0f} / {runs[(p[3], p[0])]['steal']:.0f}"
                          " ms/s)" for p in PAIRS], fontsize=8)
        ax.set_title(title + (" (ms)" if title != "drops" else ""), fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle("Case study 2, PAAM: the PicasExecutor's own wait against rclpy's, each pair on "
                 "one machine (H100, 150 s each; below each pair its runs and the host's steal)",
                 fontsize=10)
    common.save(fig, HERE / "fig_own_wait.png")


if __name__ == "__main__":
    main()
