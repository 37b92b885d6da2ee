"""``paam eval history``: every case-study run under a results tree, at a glance.

Reads each ``summary.json`` that ``paam eval case-study-1`` and ``paam eval case-study-2`` wrote
under ``--inputs`` (folders, searched recursively; only the summaries are read, so raw CSVs
may be compressed or gone) and rolls them up, one row per run and method:

* case study 2: each run's hot-path maximum, p99 and drops per setup and method (MT with
  ``--mt-executor shared`` as its own setup, "MT shared", and 4ST with ``--e0-executor cpp``
  as "4ST C++"), the maximum from the lidar timers' due time where the run recorded it, its
  segment length, the other options its command line gave, the host's mean steal; the maxima
  of all runs beside the paper's (Fig. 11a, Jetson Xavier), and the reductions of every run
  that had all three methods in one call (so on one machine) beside the targets;
* case study 1: each PAAM run's maximum of every chain against its analysis bound, for the
  runs whose bound was fed ε measured under load (a ``--calibration`` run), and the steal.

Case study 2's groups are also split by the host: quiet where it stole at most ``--quiet-steal``
ms/s on average over the run (the case studies sample ``/proc/stat``), noisy where more.

Writes ``cs2_runs.csv``, ``cs2_reductions.csv``, ``cs1_bound.csv``, ``summary.json``,
``summary.txt``, ``fig_cs2_maxima.png``, ``fig_cs2_steal.png``, ``fig_cs2_reductions.png``,
``fig_cs2_needs.png`` and ``fig_cs1_bound.png`` into ``--out``.
A run found twice (the same summary copied into two folders) counts once. Runs on different
backends are not mixed: ``--backend`` picks one (default: cuda where there are cuda runs).

    paam eval history --inputs results/eval --out results/eval/history
"""
from __future__ import annotations

import argparse
import json
import math
import shlex
from pathlib import Path
from typing import Any

import numpy as np

from paam.figures import pyplot, save
from paam_experiments.common.methods import COLORS, METHODS
from paam_experiments.common.report import fmt, out_dir, table, write_csv, write_json

#: the paper's Fig. 11a hot-path maxima (ms, Jetson Xavier); MT's PiCAS figure is not given
PAPER_CS2_MAX_MS = {("MT", "ROS 2"): 917.0, ("MT", "PAAM"): 83.0,
                    ("4ST", "ROS 2"): 510.0, ("4ST", "PiCAS"): 163.0, ("4ST", "PAAM"): 79.0}
#: case study 2's reduction targets: PAAM's maximum against ROS 2's and PiCAS's, percent
#: (None: no target)
TARGET_REDUCTION_PCT = {"MT": (-91.0, None), "4ST": (-85.0, -51.0)}
#: "MT shared": MT with ``--mt-executor shared`` (PiCAS and PAAM on one
#: MultiThreadedPicasExecutor, the paper's MT; ROS 2's MT is the same in either), kept apart from
#: the partitioned MT; "4ST C++": 4ST with ``--e0-executor cpp`` (the hot
#: path's executor compiled), kept apart from 4ST's rclpy E0; the paper's figures and targets
#: are MT's and 4ST's
SETUPS = ("4ST", "4ST C++", "MT", "MT shared")
#: a run is on a quiet host when the host's mean steal over it is at most this, ms/s (quiet
#: hosts stole 1-5 ms/s on average, contended ones 45-400)
QUIET_HOST_MS_PER_S = 20.0
#: case study 2 options that say what was run rather than how, or that the rows carry
#: themselves (segment length, scale, backend): not listed as its options
_NOT_OPTIONS = {"command", "experiment", "setups", "methods", "duration", "warmup", "gpu_ms",
                "scale", "backend", "out", "quick", "replot", "inputs", "func"}


def paper_setup(setup: str) -> str:
    """The paper's setup a row's setup is compared with ("MT shared" -> "MT", "4ST C++" ->
    "4ST")."""
    return setup.split()[0]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inputs", default="results/eval",
                   help="comma-separated folders searched for the case studies' summary.json "
                        "(default results/eval, where paam eval writes)")
    p.add_argument("--backend", choices=["cuda", "cpu"], default=None,
                   help="whose runs to roll up (default: cuda if any run used it, else cpu)")
    p.add_argument("--quiet-steal", type=float, default=QUIET_HOST_MS_PER_S, metavar="MS",
                   help="a run is on a quiet host when the host stole at most MS ms per second "
                        f"on average over it (default {QUIET_HOST_MS_PER_S:g})")
    p.add_argument("--out", default="results/eval/history")


# -- reading ------------------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        print(f"  skipped {path}: {e}")
        return None
    return data if isinstance(data, dict) else None


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else float("nan")


def _steal(host: Any) -> float:
    """The host's mean steal over all CPUs during one method's run, ms/s (NaN: not sampled)."""
    if not isinstance(host, dict):
        return float("nan")
    return _num((host.get("steal_ms_per_s") or {}).get("mean"))


def _options(command: str) -> str:
    """The options a case study 2 command line was given beyond what it ran (setups, methods,
    durations, segment lengths, backend, output): ``--flag [value]`` words as typed."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if "case-study-2" in words:
        words = words[words.index("case-study-2") + 1:]
    out, skip = [], False
    for w in words:
        if not w.startswith("--"):
            if not skip and out:
                out[-1] += f" {w}"
            continue
        flag = w.split("=", 1)[0]
        skip = flag[2:].replace("-", "_") in _NOT_OPTIONS
        if not skip:
            out.append(w)
    return " ".join(out)


def _floor(d: dict, r: dict) -> float:
    """The least the run's slowest instance could take (ms): the hot path's own run times and
    GPU segments from the later lidar (``hot_path_run_ms``), and where that was the rear lidar,
    its points transformer's TPU segment too (PointsTransformerRear holds it). Summaries
    without the later lidar per instance give the least over both orders."""
    floor = _num(d.get("hot_path_run_ms"))
    later = {k: _num((v or {}).get("max")) for k, v in (r.get("later_lidar") or {}).items()
             if isinstance(v, dict)}
    later = {k: v for k, v in later.items() if not math.isnan(v)}
    if later and max(later, key=later.get) == "rear":
        params = d.get("params") or {}
        floor += _num(params.get("tpu_ms", 0.0)) * _num(params.get("scale", 1.0))
    return floor


def _read_summary(path: Path, d: dict) -> tuple[list[dict], list[dict]]:
    """One summary's rows: (case study 2 runs and methods, case study 1 chains under PAAM)."""
    cs2: list[dict] = []
    cs1: list[dict] = []
    params, meta = d.get("params") or {}, d.get("meta") or {}
    exp = params.get("experiment")
    where = str(path.parent)
    base = {"run": where, "date": meta.get("date", ""),
            "backend": meta.get("backend", params.get("backend", "")),
            "scale": _num(params.get("scale", 1.0))}
    if exp == "case-study-2":
        options = _options(meta.get("command", ""))
        results = d.get("results") or {}
        shared = params.get("mt_executor") == "shared"
        e0_cpp = params.get("e0_executor") == "cpp"
        for setup, methods in results.items():
            for method, r in (methods or {}).items():
                hp = (r or {}).get("hot_path_ms") if isinstance(r, dict) else None
                if not hp or not hp.get("n"):
                    continue
                drops = r.get("drops") or {}
                due = r.get("hot_path_from_due_ms") or {}
                label = ("MT shared" if shared and setup == "MT"
                         else "4ST C++" if e0_cpp and setup == "4ST" else setup)
                cs2.append({**base, "setup": label,
                            "method": method,
                            "gpu_ms": _num(params.get("gpu_ms")),
                            "duration_s": _num(params.get("duration")),
                            "instances": int(hp["n"]), "max_ms": _num(hp["max"]),
                            "p99_ms": _num(hp["p99"]),
                            "from_due_max_ms": _num(due.get("max")),
                            "drops": int(drops.get("total", 0)),
                            "steal_ms_per_s": _steal(r.get("host")),
                            "floor_ms": _floor(d, r),
                            "methods_in_call": ",".join(methods),
                            "options": options})
    elif exp == "case-study-1" and params.get("calibration"):
        bounds = d.get("bound_ms") or {}
        with_ros = d.get("bound_with_ros_cost_ms") or {}
        steal = _steal((d.get("host") or {}).get("PAAM"))
        for chain, methods in (d.get("results") or {}).items():
            r = (methods or {}).get("PAAM")
            bound = _num(bounds.get(chain))
            if not isinstance(r, dict) or not r.get("n") or math.isnan(bound):
                continue
            cs1.append({**base, "chain": chain, "instances": int(r["n"]),
                        "max_ms": _num(r["max"]), "p99_ms": _num(r["p99"]),
                        "bound_ms": bound,
                        "bound_with_ros_cost_ms": _num(with_ros.get(chain)),
                        "epsilon_ms": _num(d.get("epsilon_ms")),
                        "steal_ms_per_s": steal})
    return cs2, cs1


def _key(row: dict) -> tuple:
    """What tells a run apart from a copy of it in another folder (case study 2 rows have a
    setup and a method, case study 1 rows a chain)."""
    return (row["date"], row.get("setup"), row.get("method"), row.get("chain"),
            row["instances"], round(row["max_ms"], 3))


def collect(inputs: list[Path]) -> tuple[list[dict], list[dict]]:
    """(case study 2 rows, case study 1 rows) of every summary.json under ``inputs``."""
    cs2: list[dict] = []
    cs1: list[dict] = []
    seen: set[tuple] = set()
    for root in inputs:
        if not root.is_dir():
            raise SystemExit(f"paam eval history: --inputs {root}: not a folder")
        for path in sorted(root.rglob("summary.json")):
            d = _load(path)
            if d is None:
                continue
            try:
                rows2, rows1 = _read_summary(path, d)
            except (AttributeError, KeyError, TypeError, ValueError) as e:
                print(f"  skipped {path}: not a case study summary this reads ({e!r})")
                continue
            for rows, into in ((rows2, cs2), (rows1, cs1)):
                for row in rows:
                    if _key(row) not in seen:
                        seen.add(_key(row))
                        into.append(row)
    return cs2, cs1


# -- rolling up ---------------------------------------------------------------------------------


def target_needs(setup: str, ros2_max: float, picas_max: float) -> float:
    """The largest PAAM maximum that meets ``setup``'s targets against these ROS 2 and PiCAS
    maxima (ms)."""
    a, b = TARGET_REDUCTION_PCT[paper_setup(setup)]
    need = (1.0 + a / 100.0) * ros2_max
    return need if b is None else min(need, (1.0 + b / 100.0) * picas_max)


def reductions(cs2: list[dict]) -> list[dict]:
    """PAAM's maximum against ROS 2's and PiCAS's, for every call that ran all three methods
    of a setup (so on one machine, one after the other); with the PAAM maximum the targets
    needed there and the hot path's own work (``floor_ms``: its run times and GPU segments,
    and the TPU segment where the rear lidar started later in PAAM's slowest instance: the
    least that instance could take), under which no PAAM run can go."""
    by_call: dict[tuple[str, str], dict[str, dict]] = {}
    for r in cs2:
        by_call.setdefault((r["run"], r["setup"]), {})[r["method"]] = r
    out = []
    for (run, setup), m in sorted(by_call.items()):
        if not all(k in m for k in METHODS):
            continue
        paam = m["PAAM"]["max_ms"]
        out.append({"run": run, "date": m["PAAM"]["date"], "setup": setup,
                    "gpu_ms": m["PAAM"]["gpu_ms"], "duration_s": m["PAAM"]["duration_s"],
                    "ros2_max_ms": m["ROS 2"]["max_ms"], "picas_max_ms": m["PiCAS"]["max_ms"],
                    "paam_max_ms": paam,
                    "vs_ros2_pct": 100.0 * (paam / m["ROS 2"]["max_ms"] - 1.0),
                    "vs_picas_pct": 100.0 * (paam / m["PiCAS"]["max_ms"] - 1.0),
                    "target_needs_ms": target_needs(setup, m["ROS 2"]["max_ms"],
                                                    m["PiCAS"]["max_ms"]),
                    "floor_ms": m["PAAM"]["floor_ms"],
                    "options": m["PAAM"]["options"]})
    return out


def _host_of(r: dict, quiet: float) -> str:
    steal = r["steal_ms_per_s"]
    return "unsampled" if math.isnan(steal) else "quiet" if steal <= quiet else "noisy"


def cs2_groups(cs2: list[dict], quiet: float = QUIET_HOST_MS_PER_S) -> list[dict]:
    """Per setup, method and segment length: how many runs, their maxima, drop-free runs; and
    the same split by the host: quiet (mean steal at most ``quiet`` ms/s), noisy, unsampled."""
    groups: dict[tuple, list[dict]] = {}
    for r in cs2:
        groups.setdefault((r["setup"], r["method"], r["gpu_ms"]), []).append(r)
    order = {m: i for i, m in enumerate(METHODS)}
    out = []
    for (setup, method, gpu), rows in sorted(groups.items(),
                                             key=lambda kv: (kv[0][0], order.get(kv[0][1], 9),
                                                             kv[0][2])):
        maxima = np.array([r["max_ms"] for r in rows])
        plain = [r["max_ms"] for r in rows if not r["options"]]
        out.append({"setup": setup, "method": method, "gpu_ms": gpu, "runs": len(rows),
                    "max_min_ms": float(maxima.min()), "max_median_ms": float(np.median(maxima)),
                    "max_max_ms": float(maxima.max()), "runs_without_options": len(plain),
                    "max_median_without_options_ms": float(np.median(plain)) if plain
                    else float("nan"),
                    "runs_without_drops": sum(r["drops"] == 0 for r in rows),
                    "instances": sum(r["instances"] for r in rows),
                    "paper_max_ms": PAPER_CS2_MAX_MS.get((paper_setup(setup), method)),
                    "by_host": {host: _host_group([r for r in rows
                                                   if _host_of(r, quiet) == host])
                                for host in ("quiet", "noisy", "unsampled")}})
    return out


def _host_group(rows: list[dict]) -> dict[str, Any]:
    maxima = [r["max_ms"] for r in rows]
    return {"runs": len(rows),
            "max_median_ms": float(np.median(maxima)) if maxima else float("nan"),
            "runs_without_drops": sum(r["drops"] == 0 for r in rows)}


def cs1_runs(cs1: list[dict]) -> list[dict]:
    """Per case study 1 run: chain 1 against its bound, and whether every chain held."""
    runs: dict[str, list[dict]] = {}
    for r in cs1:
        runs.setdefault(r["run"], []).append(r)
    out = []
    for run, rows in sorted(runs.items()):
        c1 = next((r for r in rows if r["chain"] == "chain1"), None)
        out.append({"run": run, "date": rows[0]["date"],
                    "chain1_max_ms": c1["max_ms"] if c1 else float("nan"),
                    "chain1_bound_ms": c1["bound_ms"] if c1 else float("nan"),
                    "chain1_held": bool(c1 and c1["max_ms"] <= c1["bound_ms"]),
                    "chains": len(rows),
                    "chains_held": sum(r["max_ms"] <= r["bound_ms"] for r in rows),
                    "steal_ms_per_s": rows[0]["steal_ms_per_s"]})
    return out


def summary_text(cs2: list[dict], red: list[dict], groups: list[dict], runs1: list[dict],
                 backend: str, quiet: float = QUIET_HOST_MS_PER_S) -> str:
    f = fmt
    lines = [f"paam eval history: {len(cs2)} case study 2 method runs, "
             f"{len(runs1)} case study 1 PAAM runs with a calibrated bound ({backend} backend)"]
    if groups:
        rows = [["setup", "method", "GPU ms", "runs", "max: lowest", "median", "highest",
                 "median, no options (runs)", "paper", "no drop"]]
        for g in groups:
            paper = g["paper_max_ms"]
            rows.append([g["setup"], g["method"], f(g["gpu_ms"]), str(g["runs"]),
                         f(g["max_min_ms"]), f(g["max_median_ms"]), f(g["max_max_ms"]),
                         f"{f(g['max_median_without_options_ms'])} "
                         f"({g['runs_without_options']})",
                         f(paper) if paper else "-", f"{g['runs_without_drops']}/{g['runs']}"])
        lines += ["", "Case study 2, hot-path maximum per run (ms; 'no options': runs whose "
                      "command gave no option beyond setups, methods, duration, segments):",
                  table(rows, right=range(2, 10))]
        rows = [["setup", "method", "GPU ms", "quiet: runs", "median max", "no drop",
                 "noisy: runs", "median max", "no drop", "unsampled"]]
        for g in groups:
            q, n = g["by_host"]["quiet"], g["by_host"]["noisy"]
            rows.append([g["setup"], g["method"], f(g["gpu_ms"]), str(q["runs"]),
                         f(q["max_median_ms"]), str(q["runs_without_drops"]), str(n["runs"]),
                         f(n["max_median_ms"]), str(n["runs_without_drops"]),
                         str(g["by_host"]["unsampled"]["runs"])])
        lines += ["", f"By the host: quiet where it stole at most {quiet:g} ms/s on average over "
                      f"the run, noisy where more, unsampled before the runs sampled it:",
                  table(rows, right=range(2, 10))]
    if red:
        rows = [["setup", "GPU ms", "s", "ROS 2", "PiCAS", "PAAM", "vs ROS 2", "vs PiCAS",
                 "needs", "floor", "run"]]
        for r in red:
            rows.append([r["setup"], f(r["gpu_ms"]), f(r["duration_s"], 0), f(r["ros2_max_ms"]),
                         f(r["picas_max_ms"]), f(r["paam_max_ms"]),
                         f"{r['vs_ros2_pct']:+.1f}%", f"{r['vs_picas_pct']:+.1f}%",
                         f(r["target_needs_ms"]), f(r["floor_ms"]), r["run"]])
        lines += ["", "Case study 2, the three methods in one call (maxima, ms); targets: "
                  + "; ".join(f"{s} {a:+.0f}%" + (f" / {b:+.0f}%" if b is not None else "")
                              for s, (a, b) in TARGET_REDUCTION_PCT.items())
                  + "; needs: the PAAM maximum that meets them in that call; floor: the hot "
                    "path's own run times and segments, the least PAAM's slowest instance "
                    "could take (its later lidar's transformer: the rear's holds the TPU "
                    "segment)",
                  table(rows, right=range(1, 10))]
        for setup in SETUPS:
            a, b = TARGET_REDUCTION_PCT[paper_setup(setup)]
            mine = [r for r in red if r["setup"] == setup]
            if not mine:
                continue
            met = sum(r["vs_ros2_pct"] <= a and (b is None or r["vs_picas_pct"] <= b)
                      for r in mine)
            alone = (f" ({a:+.0f}% against ROS 2 alone: "
                     f"{sum(r['vs_ros2_pct'] <= a for r in mine)})" if b is not None else "")
            best = min(r["vs_ros2_pct"] for r in mine)
            below = sum(r["target_needs_ms"] < r["floor_ms"] for r in mine)
            lines.append(f"  {setup}: target met in {met} of {len(mine)} calls{alone}; best "
                         f"against ROS 2 {best:+.1f}%; in {below} of them it needed PAAM under "
                         f"the hot path's own work")
            for gpu in sorted({r["gpu_ms"] for r in mine}):
                at = [r for r in mine if r["gpu_ms"] == gpu]
                floor = min(r["floor_ms"] for r in at)
                ros2 = [r["ros2_max_ms"] for r in at]
                line = (f"    at {f(gpu)} ms segments (floor {f(floor)} ms): {a:+.0f}% needs "
                        f"ROS 2's maximum at {f(floor / (1.0 + a / 100.0))} ms or more "
                        f"(its calls: {f(min(ros2))}-{f(max(ros2))})")
                if b is not None:
                    picas = [r["picas_max_ms"] for r in at]
                    line += (f", {b:+.0f}% PiCAS's at {f(floor / (1.0 + b / 100.0))} or more "
                             f"({f(min(picas))}-{f(max(picas))})")
                lines.append(line)
    if runs1:
        held = sum(r["chain1_held"] for r in runs1)
        every = sum(r["chains_held"] == r["chains"] for r in runs1)
        lines += ["", f"Case study 1: chain 1 at or under its bound in {held} of {len(runs1)} "
                      f"runs; every chain under its bound in {every} of {len(runs1)}"]
        for r in runs1:
            if not r["chain1_held"]:
                lines.append(f"  over: {f(r['chain1_max_ms'])} > {f(r['chain1_bound_ms'])} ms, "
                             f"steal {f(r['steal_ms_per_s'], 0)} ms/s, {r['run']}")
    return "\n".join(lines)


# -- figures ------------------------------------------------------------------------------------


def _segment_markers(cs2: list[dict]) -> dict[float, str]:
    """One marker per GPU segment length, the same in every figure."""
    return dict(zip(sorted({r["gpu_ms"] for r in cs2}), "o^sDv<>"))


def plot_cs2_maxima(cs2: list[dict], path: Path, title: str) -> None:
    plt = pyplot()
    from matplotlib.lines import Line2D
    setups = [s for s in SETUPS if any(r["setup"] == s for r in cs2)]
    fig, axes = plt.subplots(1, len(setups), figsize=(5.2 * len(setups), 4.6), squeeze=False)
    markers = _segment_markers(cs2)
    gpus = list(markers)
    rng = np.random.default_rng(0)
    paper_scale = all(r["scale"] == 1.0 for r in cs2)
    for ax, setup in zip(axes[0], setups):
        for i, method in enumerate(METHODS):
            for gpu in gpus:
                rows = [r for r in cs2 if r["setup"] == setup and r["method"] == method
                        and r["gpu_ms"] == gpu]
                if not rows:
                    continue
                x = i + rng.uniform(-0.25, 0.25, len(rows))
                y = [r["max_ms"] for r in rows]
                plain = np.array([not r["options"] for r in rows])
                color = COLORS[method]
                ax.scatter(x[plain], np.array(y)[plain], s=18, marker=markers[gpu], color=color,
                           alpha=0.8)
                ax.scatter(x[~plain], np.array(y)[~plain], s=18, marker=markers[gpu],
                           facecolors="none", edgecolors=color, alpha=0.8)
            paper = PAPER_CS2_MAX_MS.get((paper_setup(setup), method))
            if paper and paper_scale:
                ax.hlines(paper, i - 0.4, i + 0.4, colors="k", linestyles="--", linewidth=1.5)
                ax.annotate(f"paper {paper:g}", (i + 0.4, paper), fontsize=8, va="bottom",
                            ha="right")
        ax.set_yscale("log")
        ax.set_xticks(range(len(METHODS)), METHODS)
        ax.set_xlim(-0.6, len(METHODS) - 0.4)
        n = sum(r["setup"] == setup for r in cs2)
        ax.set_title(f"{setup}: {n} runs")
        ax.set_ylabel("hot-path maximum per run (ms, log)")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        handles = [Line2D([], [], marker=markers[g], linestyle="none", color="grey",
                          label=f"{g:g} ms GPU segments") for g in gpus]
        handles.append(Line2D([], [], marker="o", linestyle="none", markerfacecolor="none",
                              markeredgecolor="grey", label="hollow: with other options"))
        ax.legend(handles=handles, fontsize=8, loc="upper right")
    fig.suptitle(title, fontsize=10)
    save(fig, path)


def plot_cs2_steal(cs2: list[dict], path: Path, title: str, quiet: float) -> None:
    plt = pyplot()
    rows = [r for r in cs2 if not math.isnan(r["steal_ms_per_s"])]
    setups = [s for s in SETUPS if any(r["setup"] == s for r in rows)]
    if not setups:
        return
    fig, axes = plt.subplots(1, len(setups), figsize=(5.2 * len(setups), 4.4), squeeze=False)
    markers = _segment_markers(cs2)
    for ax, setup in zip(axes[0], setups):
        for method in METHODS:
            mine = [r for r in rows if r["setup"] == setup and r["method"] == method]
            for gpu, marker in markers.items():
                part = [r for r in mine if r["gpu_ms"] == gpu]
                if part:
                    ax.scatter([r["steal_ms_per_s"] for r in part], [r["max_ms"] for r in part],
                               s=16, marker=marker, color=COLORS[method], alpha=0.8,
                               label=f"{method}, {gpu:g} ms ({len(part)} runs)")
        ax.set_xlim(left=0)
        ax.axvline(quiet, color="grey", linestyle=":", linewidth=1)
        ax.annotate(f"quiet ≤ {quiet:g}", (quiet, 0.98), xycoords=("data", "axes fraction"),
                    fontsize=8, ha="right", va="top", rotation=90)
        ax.set_xscale("symlog", linthresh=10)
        ax.set_yscale("log")
        ax.set_xlabel("host's mean steal over the run (ms/s, symlog)")
        ax.set_ylabel("hot-path maximum (ms, log)")
        ax.set_title(setup)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    save(fig, path)


def plot_reductions(red: list[dict], path: Path, title: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    for setup, marker in zip(SETUPS, "oDs^"):
        rows = [r for r in red if r["setup"] == setup]
        if rows:
            ax.scatter([r["vs_ros2_pct"] for r in rows], [r["vs_picas_pct"] for r in rows],
                       marker=marker, s=30, label=f"{setup} ({len(rows)} calls)", alpha=0.8)
    for setup, (a, b) in TARGET_REDUCTION_PCT.items():
        if b is not None:  # where both of this setup's targets are met
            ax.fill_between([-100, a], -100, b, color="tab:green", alpha=0.08, linewidth=0)
        ax.axvline(a, color="k", linestyle="--" if setup == "MT" else ":", linewidth=1)
        ax.annotate(f"{setup} target {a:+.0f}%", (a, 0.02), xycoords=("data", "axes fraction"),
                    rotation=90, fontsize=8, ha="right")
        if b is not None:
            ax.axhline(b, color="k", linestyle=":", linewidth=1)
            ax.annotate(f"{setup} target {b:+.0f}% vs PiCAS", (0.02, b),
                        xycoords=("axes fraction", "data"), fontsize=8, va="bottom")
    xs = [r["vs_ros2_pct"] for r in red] + [a for a, _ in TARGET_REDUCTION_PCT.values()]
    ys = [r["vs_picas_pct"] for r in red] + [b for _, b in TARGET_REDUCTION_PCT.values()
                                             if b is not None]
    ax.set_xlim(min(xs) - 3, max(xs) + 3)
    ax.set_ylim(min(ys) - 5, max(ys) + 5)
    ax.axhline(0, color="grey", linewidth=0.5)
    ax.set_xlabel("PAAM's maximum against ROS 2's (%)")
    ax.set_ylabel("PAAM's maximum against PiCAS's (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    save(fig, path)


def plot_needs(red: list[dict], path: Path, title: str) -> None:
    """Per three-method call, by setup: PAAM's maximum, the maximum its targets needed there,
    and the hot path's own work (the floor no instance goes under)."""
    plt = pyplot()
    setups = [s for s in SETUPS if any(r["setup"] == s for r in red)]
    fig, axes = plt.subplots(1, len(setups), figsize=(4.2 * len(setups), 4.4), squeeze=False,
                             sharey=True)
    for ax, setup in zip(axes[0], setups):
        rows = sorted((r for r in red if r["setup"] == setup),
                      key=lambda r: (r["gpu_ms"], r["date"], r["run"]))
        x = np.arange(len(rows))
        ax.bar(x, [r["floor_ms"] for r in rows], width=0.7, color="#dddddd",
               label="the hot path's own work (floor)")
        ax.scatter(x, [r["paam_max_ms"] for r in rows], color=COLORS["PAAM"], zorder=3,
                   label="PAAM's maximum")
        ax.scatter(x, [r["target_needs_ms"] for r in rows], color="tab:red", marker="x",
                   zorder=3, label="what the targets needed")
        ax.set_xticks(x, [f"{r['gpu_ms']:g} ms" for r in rows], fontsize=7, rotation=90)
        ax.set_title(f"{setup}: {len(rows)} calls", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_xlabel("call, by GPU segment length")
    axes[0][0].set_ylabel("hot-path maximum (ms)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8)
    fig.suptitle(title, fontsize=10)
    save(fig, path, rect=(0, 0.06, 1, 1))


def plot_cs1_bound(cs1: list[dict], path: Path, title: str) -> None:
    plt = pyplot()
    rows = [r for r in cs1 if r["chain"] == "chain1"]
    fig, ax = plt.subplots(figsize=(6.0, 5.0))
    steal = np.array([r["steal_ms_per_s"] for r in rows])
    x = np.array([r["bound_ms"] for r in rows])
    y = np.array([r["max_ms"] for r in rows])
    known = ~np.isnan(steal)
    ax.scatter(x[~known], y[~known], s=28, color="lightgrey", edgecolors="k",
               label="host not sampled")
    if known.any():
        sc = ax.scatter(x[known], y[known], s=28, c=steal[known], cmap="viridis",
                        edgecolors="k", label="colour: host's mean steal")
        fig.colorbar(sc, ax=ax, label="host's mean steal in PAAM's run (ms/s)")
    lo, hi = min(x.min(), y.min()) * 0.95, max(x.max(), y.max()) * 1.05
    ax.plot([lo, hi], [lo, hi], "k--", linewidth=1, label="maximum = bound")
    held = int((y <= x).sum())
    ax.set_xlabel("chain 1's analysis bound (ms)")
    ax.set_ylabel("chain 1's observed maximum under PAAM (ms)")
    ax.set_title(f"{title}\nat or under the bound in {held} of {len(rows)} runs", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, alpha=0.3)
    save(fig, path)


# -- driver -------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    inputs = [Path(p.strip()) for p in args.inputs.split(",") if p.strip()]
    if not inputs:
        raise SystemExit("paam eval history: --inputs names no folder")
    print(f"paam eval history: reading the case studies' summary.json under "
          f"{', '.join(map(str, inputs))}", flush=True)
    cs2, cs1 = collect(inputs)
    backends = {r["backend"] for r in cs2 + cs1}
    backend = args.backend or ("cuda" if "cuda" in backends else "cpu")
    cs2 = [r for r in cs2 if r["backend"] == backend]
    cs1 = [r for r in cs1 if r["backend"] == backend]
    if not cs2 and not cs1:
        print(f"paam eval history: no case study run on the {backend} backend under "
              f"{', '.join(map(str, inputs))} (run paam eval case-study-1 or case-study-2 "
              f"first, or pass --inputs)")
        return 1
    out = out_dir(args.out)
    quiet = args.quiet_steal
    red, groups, runs1 = reductions(cs2), cs2_groups(cs2, quiet), cs1_runs(cs1)
    write_csv(out / "cs2_runs.csv", cs2)
    write_csv(out / "cs2_reductions.csv", red)
    write_csv(out / "cs1_bound.csv", cs1)
    write_json(out / "summary.json", {"backend": backend, "inputs": list(map(str, inputs)),
                                      "cs2_groups": groups, "cs2_reductions": red,
                                      "cs1_runs": runs1})
    text = summary_text(cs2, red, groups, runs1, backend, quiet)
    (out / "summary.txt").write_text(text + "\n")
    print(text)
    dates = sorted({r["date"] for r in cs2 + cs1 if r["date"]})
    span = f"{dates[0]} to {dates[-1]}" if dates else "undated"
    figures = []
    if cs2:
        plot_cs2_maxima(cs2, out / "fig_cs2_maxima.png",
                        f"Case study 2: hot-path maximum of every run ({backend}, {span}); "
                        f"dashed: the paper's (Jetson Xavier)")
        figures.append("fig_cs2_maxima.png")
        if any(not math.isnan(r["steal_ms_per_s"]) for r in cs2):
            plot_cs2_steal(cs2, out / "fig_cs2_steal.png",
                           f"Case study 2: each run's maximum against what the host stole "
                           f"({backend}, {span})", quiet)
            figures.append("fig_cs2_steal.png")
    if red:
        plot_reductions(red, out / "fig_cs2_reductions.png",
                        f"Case study 2: the three methods in one call ({backend}, {span})")
        figures.append("fig_cs2_reductions.png")
        plot_needs(red, out / "fig_cs2_needs.png",
                   f"Case study 2: what the targets needed in each three-method call against "
                   f"the hot path's own work ({backend}, {span})")
        figures.append("fig_cs2_needs.png")
    if any(r["chain"] == "chain1" for r in cs1):
        plot_cs1_bound(cs1, out / "fig_cs1_bound.png",
                       f"Case study 1, chain 1 under PAAM ({backend}, {span})")
        figures.append("fig_cs1_bound.png")
    print(f"wrote cs2_runs.csv, cs2_reductions.csv, cs1_bound.csv, summary.json, summary.txt"
          f"{', ' if figures else ''}{', '.join(figures)} to {out}")
    return 0
