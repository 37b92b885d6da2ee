"""Case study 2, 4ST at 2.5 ms on two lent H100 machines (2026-11-26, code 1cd0285, thirty-
seventh session): the three methods with every E0 in C++ (``--e0-executor cpp``), with paamd's
default waits and with the request-overhead knobs (``--server-poll-us always --server-cuda-wait
spin --wait spin``), and with the hot path's only (``--server-spin-buckets 1 --hot-wait spin``,
code f0df6af), against the three methods with E0 in rclpy; 150 s per method. Machine 1 ran c3,
s1, p3, then s2, c2; machine 2 ran k3a, k3b; machine 3 ran h3, hk. Writes compare.txt and
fig_e0_cpp_three.png beside this file.

    .venv/bin/python docs/results/eval-h100/e0-cpp-three-2026-11-26/compare.py   (after make install)
"""
import json
import lzma
from pathlib import Path

import numpy as np

from paam import figures
from paam.eval import common, history

HERE = Path(__file__).resolve().parent
# label, what it ran, machine
RUNS = (("c3", "E0 C++, paamd's default waits", 1),
        ("s1", "E0 C++, spin knobs", 1),
        ("p3", "E0 rclpy, paamd's default waits", 1),
        ("s2", "E0 C++, spin knobs", 1),
        ("c2", "E0 C++, paamd's default waits", 1),
        ("k3a", "E0 C++, spin knobs", 2),
        ("k3b", "E0 C++, spin knobs", 2),
        ("h3", "E0 C++, hot path spins", 3),
        ("hk", "E0 C++, spin knobs", 3))
METHODS = ("ROS 2", "PiCAS", "PAAM")
COLORS = {"ROS 2": "#888888", "PiCAS": "#f0a030", "PAAM": "#1f5fa8"}


def columns(run: str, method: str, *names: str) -> list[np.ndarray]:
    with lzma.open(HERE / run / "hot_path.csv.xz", "rt") as f:
        header = f.readline().strip().split(",")
        idx = [header.index(n) for n in names]
        m = header.index("method")
        rows = [r for r in (line.rstrip("\n").split(",") for line in f) if r[m] == method]
    return [np.array([float(r[i]) if r[i] else np.nan for r in rows]) for i in idx]


def short(what: str) -> str:
    return what.replace("E0 ", "").replace("paamd's default waits", "default")


def stats(x: np.ndarray) -> str:
    x = x[np.isfinite(x)]
    return " / ".join(common.fmt(v) for v in (np.percentile(x, 50), np.percentile(x, 99), x.max()))


def main() -> None:
    header = ("run", "what", "machine", "method", "n", "KPI p50 / p99 / max",
              "from due p50 / p99 / max", "drops", "lidar lost", "steal ms/s mean / max",
              "CPUs busy")
    rows = [header]
    paam_kpi = {}
    calls = []   # (run, what, {method: max})
    floors = set()
    for run, what, machine in RUNS:
        data = json.loads((HERE / run / "summary.json").read_text())
        maxima = {}
        for method, s in data["results"]["4ST"].items():
            kpi, late = columns(run, method, "latency_ms", "lidar_late_ms")
            due = kpi + late  # from the later lidar timer's due time
            maxima[method] = float(kpi.max())
            if method == "PAAM":
                paam_kpi[run] = kpi
                floors.add(history._floor(data, s))
            lost = s["lidar_samples"]
            host = s["host"]
            rows.append((run, what, str(machine), method, str(len(kpi)), stats(kpi), stats(due),
                         str(s["drops"]["total"]),
                         f"{2 * lost['expected_each'] - lost['front'] - lost['rear']} of "
                         f"{2 * lost['expected_each']}",
                         f"{common.fmt(host['steal_ms_per_s']['mean'])} / "
                         f"{common.fmt(host['steal_ms_per_s']['max'])}",
                         f"{host['busy_ms_per_s']['mean'] / 1000:.2f}"))
        if len(maxima) == 3:
            calls.append((run, what, maxima))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines += ["", "three-method calls, maxima (ms): ROS 2 -> PiCAS -> PAAM (PAAM against ROS 2 "
                  "/ against PiCAS); targets -85% / -51%"]
    for run, what, m in calls:
        lines.append(f"  {run} ({what}): {m['ROS 2']:.1f} -> {m['PiCAS']:.1f} -> "
                     f"{m['PAAM']:.1f} ms ({100 * (m['PAAM'] / m['ROS 2'] - 1):+.1f}% / "
                     f"{100 * (m['PAAM'] / m['PiCAS'] - 1):+.1f}%)")
    (floor,) = floors   # every PAAM instance here starts at the rear lidar
    lines.append(f"the hot path's own work from the rear lidar (floor): {floor:g} ms")
    text = "\n".join(lines)
    (HERE / "compare.txt").write_text(text + "\n")
    print(text)

    plt = figures.pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.4))
    width = 0.26
    for i, (run, what, m) in enumerate(calls):
        for j, method in enumerate(METHODS):
            a.bar(i + (j - 1) * width, m[method], width, color=COLORS[method],
                  label=method if i == 0 else None)
        a.text(i, m["ROS 2"] * 1.08, f"{100 * (m['PAAM'] / m['ROS 2'] - 1):+.1f}%\n"
               f"{100 * (m['PAAM'] / m['PiCAS'] - 1):+.1f}%", ha="center", fontsize=7)
    a.axhline(floor, color="grey", ls=":", lw=1)
    a.set_xticks(range(len(calls)), [f"{run}\n{short(what)}" for run, what, _ in calls],
                 fontsize=7)
    a.set(yscale="log", ylabel="hot-path maximum (ms, KPI)", ylim=(50, 2000),
          title="three methods per call (PAAM vs ROS 2 / vs PiCAS)")
    a.legend(fontsize=8, loc="upper left", ncol=3)
    for run, what, _ in RUNS:
        x = np.sort(paam_kpi[run])
        style, color = (("-", "#c0392b") if "knobs" in what else
                        ("-.", "#7b3fa0") if "hot path" in what else
                        ("--", "#1f5fa8") if "C++" in what else (":", "#2a9d3a"))
        b.plot(x, 1.0 - np.arange(len(x)) / len(x), style, color=color,
               alpha=1.0 if run in ("c3", "p3", "k3b", "h3") else 0.55, label=f"{run}: {what}")
    b.axvline(floor, color="grey", ls=":", lw=1)
    b.text(floor + 0.2, 2e-3, f"hot path's own\nwork, {floor:g} ms", fontsize=7, color="grey")
    b.set(xlabel="PAAM hot-path latency (ms, the reference system's KPI)", yscale="log",
          ylabel="share of instances above", xlim=(floor - 1, 100),
          title="PAAM, 1 500 instances per run")
    b.legend(fontsize=6.5)
    fig.suptitle("Case study 2, 4ST, 2.5 ms GPU segments, lent H100 machines, 150 s per method "
                 "(2026-11-26)", fontsize=9)
    figures.save(fig, HERE / "fig_e0_cpp_three.png", rect=(0, 0, 1, 0.95))


if __name__ == "__main__":
    main()
