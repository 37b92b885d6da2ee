"""Case study 2, 4ST at 2.5 ms on one lent H100 machine (2026-11-26, code 131e98f): E0, the
hot path's executor, as the rclpy process (paam.ros.PicasExecutor) against paam_cs2_executor
(the same executor and callbacks in C++ on rcl, ``--e0-executor cpp``), under PAAM, and PiCAS
with the C++ E0; 150 s each, in the order paam-cpp, paam-py, picas-cpp. The KPI, the hot path
from the lidar timers' due time, E0's own CPU time outside callbacks per instance, drops, lidar
activations lost and the host's steal. Writes compare.txt and fig_e0_cpp.png beside this file.

    .venv/bin/python docs/results/eval-h100/e0-cpp-2026-11-26/compare.py   (after make install)
"""
import json
import lzma
from pathlib import Path

import numpy as np

from paam import figures
from paam.eval import common, history

HERE = Path(__file__).resolve().parent
RUNS = (("paam-py", "PAAM, E0 in rclpy", "#9ecae1"),
        ("paam-cpp", "PAAM, E0 in C++", "#1f5fa8"),
        ("picas-cpp", "PiCAS, E0 in C++", "#f0a030"))


def columns(run: str, *names: str) -> list[np.ndarray]:
    with lzma.open(HERE / run / "hot_path.csv.xz", "rt") as f:
        header = f.readline().strip().split(",")
        idx = [header.index(n) for n in names]
        rows = [line.rstrip("\n").split(",") for line in f]
    return [np.array([float(r[i]) if r[i] else np.nan for r in rows]) for i in idx]


def stats(x: np.ndarray) -> str:
    x = x[np.isfinite(x)]
    return " / ".join(common.fmt(v) for v in (np.percentile(x, 50), np.percentile(x, 99), x.max()))


def main() -> None:
    header = ("run", "n", "KPI p50 / p99 / max", "from due p50 / p99 / max",
              "E0 own CPU outside callbacks p50 / p99 / max", "drops", "lidar lost",
              "steal ms/s mean / max", "quiet n, max")
    rows = [header]
    series = {}
    floors = set()
    for run, label, _ in RUNS:
        data = json.loads((HERE / run / "summary.json").read_text())
        (s,) = data["results"]["4ST"].values()
        floors.add(history._floor(data, s))  # every instance here starts at the rear lidar
        kpi, late, outside = columns(run, "latency_ms", "lidar_late_ms", "e0_outside_cpu_ms")
        due = kpi + late  # from the later lidar timer's due time
        series[run] = (kpi, outside)
        lost = s["lidar_samples"]
        steal = s["host"]["steal_ms_per_s"]
        quiet = (s.get("hot_path_by_host_steal") or {}).get("quiet") or {}
        rows.append((label, str(len(kpi)), stats(kpi), stats(due), stats(outside),
                     str(s["drops"]["total"]),
                     f"{2 * lost['expected_each'] - lost['front'] - lost['rear']} of "
                     f"{2 * lost['expected_each']}",
                     f"{common.fmt(steal['mean'])} / {common.fmt(steal['max'])}",
                     f"{quiet.get('n', '-')}, {common.fmt(quiet.get('max', float('nan')))}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    text = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
    (HERE / "compare.txt").write_text(text + "\n")
    print(text)

    plt = figures.pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for run, label, color in RUNS:
        kpi, outside = series[run]
        for ax, x in ((a, kpi), (b, outside[np.isfinite(outside)])):
            x = np.sort(x)
            ax.plot(x, 1.0 - np.arange(len(x)) / len(x), color=color, label=label)
    (floor,) = floors
    a.axvline(floor, color="grey", ls=":", lw=1)
    a.text(floor - 0.3, 2e-3, f"hot path's own\nwork, {floor:g} ms", fontsize=7, color="grey",
           ha="right")
    a.set_xlim(left=floor - 7)
    a.set(xlabel="hot-path latency (ms, the reference system's KPI)", yscale="log",
          ylabel="share of instances above",
          title="hot path (" + ", ".join(str(len(series[run][0])) for run, _, _ in RUNS)
          + " instances)")
    b.set(xlabel="E0's own CPU time outside callbacks per instance (ms)", yscale="log",
          xscale="log", title="E0's executor work per instance")
    a.legend(fontsize=8)
    fig.suptitle("Case study 2, 4ST, 2.5 ms GPU segments, one H100 machine, 150 s each "
                 "(2026-11-26)", fontsize=9)
    figures.save(fig, HERE / "fig_e0_cpp.png", rect=(0, 0, 1, 0.95))


if __name__ == "__main__":
    main()
