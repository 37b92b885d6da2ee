"""The runs of this folder side by side: the hot path by the KPI and from the lidar timers' due
time, E0's time per instance, and the analysis' bound on the hot path, with the inputs measured
as maxima (as the summary gives it) and as typical values (what the hot path needs per instance
when nothing goes wrong). Writes e0_bound.txt and fig_e0_breakdown.png beside this file.

    PYTHONPATH=python python docs/results/eval-h100/case-study-2-e0-bound-2026-11-23/e0_bound.py
"""
import csv
import lzma
import json
from pathlib import Path

import numpy as np

from paam.eval import case_study2 as cs2
from paam.eval import common

HERE = Path(__file__).resolve().parent
RUNS = ("p1", "p1b", "c1", "r1", "p2", "p25", "c25", "r25")
N_HOT = len(cs2.HOT_CALLBACKS)


def _csv(path: Path) -> list[dict]:
    with lzma.open(path, "rt") as f:
        return list(csv.DictReader(f))


def _col(rows, name) -> np.ndarray:
    return np.asarray([float(r[name]) if r[name] != "" else np.nan for r in rows])


def typical_bound(run: Path, outside_ms: float, params: dict, placement: dict,
                  buckets: int) -> dict:
    """The analysis with typical inputs: epsilon, the p99 server overhead of a hot-path request;
    the cost per callback, ``outside_ms`` (E0's median time outside callbacks per instance) per
    hot-path callback; the settings request at its p99 (not a bound: the demand of an instance
    that meets no outlier)."""
    st = _csv(run / "paam_stages_hot_settings.csv.xz")
    names = [k for k in st[0] if k.endswith("_us")]
    tot = np.asarray([[float(r[k]) for k in names] for r in st]) / 1e3
    prio = np.asarray([int(r["chain_priority"]) for r in st])
    dev = names.index("device_start->device_end_us")
    eps = float(np.percentile((tot.sum(axis=1) - tot[:, dev])[prio == cs2.HOT_PRIORITY], 99))
    blocker = float(np.percentile(tot[prio == cs2.SETTINGS_PRIORITY].sum(axis=1), 99))
    outside = outside_ms / N_HOT
    spec = cs2.analysis_spec(params["gpu_ms"], params["tpu_ms"], params["scale"],
                             placement["executor_cpus"], buckets, eps,
                             common.default_kappa(params["backend"]), outside, blocker)
    return {"epsilon_ms": eps, "cost_ms": outside, "settings_ms": blocker,
            **cs2.hot_path_bound(spec)}


def main() -> None:
    rows = [["run", "method", "GPU ms", "n", "drops", "KPI max", "from due p50", "p99", "max",
             "E0 hot p50", "lower p50", "outside p50", "lower started inside",
             "bound (maxima)", "eps max", "cost max", "demand (typical)", "eps p99",
             "cost p50"]]
    fig = []
    for name in RUNS:
        run = HERE / name
        data = json.loads((run / "summary.json").read_text())
        params = data["params"]
        method = next(iter(data["results"]["4ST"]))
        s = data["results"]["4ST"][method]
        due, bd = s["hot_path_from_due_ms"], s["hot_executor_from_due"]
        inside = sum(v for k, v in bd["lower_started_histogram"].items() if k != "0")
        hist = _csv(run / "hot_path.csv.xz")
        med = {k: float(np.nanmedian(_col(hist, f"e0_{k}")))
               for k in ("hot_ms", "lower_ms", "outside_ms")}
        b = s.get("analysis")
        t = (typical_bound(run, med["outside_ms"], params, data["placement"],
                           data["gpu_buckets"]) if b else None)
        rows.append([name, method, f"{params['gpu_ms']:g}", str(s["hot_path_ms"]["n"]),
                     str(s["drops"]["total"]), common.fmt(s["hot_path_ms"]["max"]),
                     common.fmt(due["p50"]), common.fmt(due["p99"]), common.fmt(due["max"]),
                     common.fmt(med["hot_ms"]), common.fmt(med["lower_ms"]),
                     common.fmt(med["outside_ms"]), f"{inside} of {bd['instances']}",
                     common.fmt(b["with_cost_sync_blocker"]["bound_ms"]) if b else "-",
                     common.fmt(b["epsilon_ms"], 2) if b else "-",
                     common.fmt(b["cost_per_callback_ms"], 2) if b else "-",
                     common.fmt(t["bound_ms"]) if t else "-",
                     common.fmt(t["epsilon_ms"], 2) if t else "-",
                     common.fmt(t["cost_ms"], 2) if t else "-"])
        fig.append((f"{name}\n{method} {params['gpu_ms']:g} ms", med))
    text = ("Case study 2, 4ST, H100 (machine G), 150 s per run, reference run times. All times "
            "in ms.\nfrom due: the hot path from the lidar timers' due time; E0 hot / lower / "
            "outside: E0's time in each instance from the due time in hot-path callbacks, in "
            "lower-priority ones, outside callbacks (medians); lower started inside: instances "
            "in which a lower-priority callback started after the due time.\nbound (maxima): "
            "the analysis with epsilon, the cost per callback and the settings request at their "
            "measured maxima (summary.txt's last bound); demand (typical): the same analysis "
            "with epsilon at its p99, the cost per callback at its median, the settings request "
            "at its p99 (not a bound). Period 100 ms.\n\n"
            + common.table(rows, right=range(2, len(rows[0]))) + "\n")
    (HERE / "e0_bound.txt").write_text(text)
    print(text)
    plt = common.pyplot()
    f, ax = plt.subplots(figsize=(10, 4.2))
    x = np.arange(len(fig))
    bottom = np.zeros(len(fig))
    for key, label, color in (("hot_ms", "hot-path callbacks", "#4c9be8"),
                              ("lower_ms", "lower-priority callbacks", "#e8a04c"),
                              ("outside_ms", "outside callbacks (executor, messages)",
                               "#999999")):
        v = np.asarray([m[key] for _l, m in fig])
        ax.bar(x, v, bottom=bottom, color=color, label=label)
        bottom += v
    ax.axhline(100, color="k", ls=":", lw=1, label="period (100 ms)")
    ax.set_xticks(x, [lbl for lbl, _m in fig], fontsize=8)
    ax.set_ylabel("ms from the timers' due time (median)")
    ax.set_title("Case study 2, 4ST on the H100: where E0's time goes in a hot-path instance")
    ax.legend(fontsize=8, loc="upper left")
    common.save(f, HERE / "fig_e0_breakdown.png")


if __name__ == "__main__":
    main()
