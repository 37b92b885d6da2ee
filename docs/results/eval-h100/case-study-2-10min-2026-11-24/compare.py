"""Case study 2, 4ST at 2.5 ms, the three methods at (or near) the paper's 10 minutes per run, on
two machines: O (PAAM 600 s, PiCAS 600 s, ROS 2 400 s) and P (ROS 2 600 s, PAAM 600 s). The hot
path by the KPI and from the lidar timers' due time, drops, lidar activations lost, E0's time
outside callbacks, the host's steal and PAAM's hot path in quiet and noisy seconds. Writes
compare.txt and fig_10min.png beside this file.

    PYTHONPATH=python python docs/results/eval-h100/case-study-2-10min-2026-11-24/compare.py
"""
import lzma
import importlib.util
import json
from pathlib import Path

import numpy as np

from paam.eval import common

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "own_wait_compare", HERE.parent / "case-study-2-own-wait-2026-11-24" / "compare.py")
_own = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_own)

RUNS = (("r400", "O"), ("c600", "O"), ("p600", "O"), ("r600", "P"), ("p600b", "P"))
COLORS = {"ROS 2": "#bbbbbb", "PiCAS": "#f0a030", "PAAM": "#4c9be8"}


def load(run: str) -> dict:
    r = _own.load(HERE, run)
    data = json.loads((HERE / run / "summary.json").read_text())
    (by_method,) = data["results"].values()
    (s,) = by_method.values()
    r["duration"] = data["params"]["duration"]
    r["by_steal"] = s.get("hot_path_by_host_steal")
    r["lidar_expected"] = 2 * s["lidar_samples"]["expected_each"]
    return r


def column(run: str, name: str, csv: str = "hot_path.csv.xz") -> np.ndarray:
    with lzma.open(HERE / run / csv, "rt") as f:
        header = f.readline().strip().split(",")
        i = header.index(name)
        return np.array([float(line.split(",")[i]) for line in f])


def reduction(a: float, b: float) -> str:
    return f"{100.0 * (b - a) / a:+.1f}%"


def main() -> None:
    runs = {run: load(run) | {"machine": m, "run": run} for run, m in RUNS}
    rows = [["machine", "run", "method", "s", "steal ms/s", "n", "drops", "lidar lost",
             "KPI p50", "KPI p99", "KPI max", "due p50", "due p99", "due max", "E0 outside p50",
             "outside max", "quiet n / max / drops", "noisy n / max / drops"]]
    for run, _m in RUNS:
        r = runs[run]
        q = r["by_steal"]
        split = (("-", "-") if not q else tuple(
            f"{q[k]['n']} / {common.fmt(q[k]['max'])} / {q['drops'][k]}"
            for k in ("quiet", "noisy")))
        rows.append([r["machine"], run, r["method"], f"{r['duration']:g}", common.fmt(r["steal"]),
                     str(r["n"]), str(r["drops"]), f"{max(0, r['skipped'])} of "
                     f"{r['lidar_expected']}", common.fmt(r["kpi"]["p50"]),
                     common.fmt(r["kpi"]["p99"]), common.fmt(r["kpi"]["max"]),
                     common.fmt(r["due"]["p50"]), common.fmt(r["due"]["p99"]),
                     common.fmt(r["due"]["max"]), common.fmt(r["e0"]["outside_ms"]),
                     common.fmt(r["outside_max"]), *split])
    pairs = [("O", "r400", "p600"), ("O", "c600", "p600"), ("P", "r600", "p600b")]
    lines = []
    for machine, base, paam in pairs:
        a, b = runs[base], runs[paam]
        lines.append(f"  machine {machine}: {a['method']} ({base}) -> PAAM ({paam}): KPI max "
                     f"{common.fmt(a['kpi']['max'])} -> {common.fmt(b['kpi']['max'])} "
                     f"({reduction(a['kpi']['max'], b['kpi']['max'])}), p99 "
                     f"{common.fmt(a['kpi']['p99'])} -> {common.fmt(b['kpi']['p99'])} "
                     f"({reduction(a['kpi']['p99'], b['kpi']['p99'])}); from due max "
                     f"{common.fmt(a['due']['max'])} -> {common.fmt(b['due']['max'])} "
                     f"({reduction(a['due']['max'], b['due']['max'])})")
    text = ("Case study 2 on the H100, 4ST, GPU segments 2.5 ms, reference run times, lean "
            "nodes, the PicasExecutor's own wait, nice fallback, code 02b078f; machine O "
            "2026-11-24 03:33-04:01 UTC, machine P 04:02-04:23 UTC. All times in ms. s: the "
            "run's length; KPI: the reference system's hot-path latency; due: from the lidar "
            "timers' due time; lidar lost: lidar timer activations that never ran; E0 outside: "
            "E0's time outside callbacks in each instance from the due time (median, maximum); "
            "steal: what the host took, mean over all CPUs; quiet / noisy: hot-path instances "
            "in seconds where the host stole at most / more than 50 ms/s.\n\n"
            + common.table(rows, right=range(3, len(rows[0]))) + "\n\nReductions (same machine):\n"
            + "\n".join(lines) + "\n")
    (HERE / "compare.txt").write_text(text)
    print(text)

    plt = common.pyplot()
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(12, 9), gridspec_kw={"height_ratios": [1, 1]})
    data = [column(run, "latency_ms") for run, _m in RUNS]
    parts = ax.boxplot(data, whis=(0, 100), widths=0.5, patch_artist=True)
    for patch, (run, _m) in zip(parts["boxes"], RUNS):
        patch.set_facecolor(COLORS[runs[run]["method"]])
    ax.set_yscale("log")
    ax.set_yticks([70, 100, 150, 200, 300, 500], ["70", "100", "150", "200", "300", "500"])
    ax.minorticks_off()
    ax.set_xticks(range(1, len(RUNS) + 1),
                  [f"{runs[r]['method']}, machine {m}\n{r}, {runs[r]['duration']:g} s\n"
                   f"max {runs[r]['kpi']['max']:.1f}, drops {runs[r]['drops']}" for r, m in RUNS],
                  fontsize=8)
    ax.set_ylabel("hot-path latency (ms, log)")
    ax.axhline(79, color="k", lw=0.8, ls=":")
    ax.text(0.55, 79, "paper's PAAM max, 79 ms", fontsize=7, va="bottom")
    ax.set_title("Hot-path latency (KPI), whiskers at min and max", fontsize=10)

    for run, color in (("p600", "#4c9be8"), ("p600b", "#1f4e8c")):
        t = column(run, "t_s")
        ax2.plot(t, column(run, "latency_ms"), ".", ms=1.5, color=color,
                 label=f"PAAM {run} (machine {runs[run]['machine']})")
    ax2.set_ylabel("PAAM hot-path latency (ms)")
    ax2.set_xlabel("time in the run (s)")
    ax3 = ax2.twinx()
    for run, color in (("p600", "#e05050"), ("p600b", "#8c1f1f")):
        ax3.plot(column(run, "t_s", "host_stat.csv.xz"),
                 column(run, "steal_ms", "host_stat.csv.xz"), lw=0.6, color=color, alpha=0.7,
                 label=f"host steal during {run}")
    ax3.set_ylabel("host steal, all CPUs (ms/s)")
    h1, l1 = ax2.get_legend_handles_labels()
    h2, l2 = ax3.get_legend_handles_labels()
    ax2.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper left", markerscale=6)
    ax2.set_title("PAAM's hot path over the two 10-minute runs, beside the host's steal",
                  fontsize=10)
    fig.suptitle("Case study 2, 4ST, 2.5 ms GPU segments, about 10 minutes per method "
                 "(H100, 2026-11-24)", fontsize=11)
    common.save(fig, HERE / "fig_10min.png")


if __name__ == "__main__":
    main()
