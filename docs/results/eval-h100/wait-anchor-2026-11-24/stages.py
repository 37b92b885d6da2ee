"""Where a sleeping CUDA wait's lateness goes in paamd's request stages, before and after the
device times were anchored at the issue (sixteenth session, 2026-11-24).

Before (fifteenth session, ../cuda-wait-2026-11-24/, code 3133c5d and earlier): every wait mode
anchored the device times at the completion its worker saw, so a wait that saw it late moved
the kernel's start and end later by as much: the lateness read as launch time (picked ->
device_start). After (this directory, code 93034e8): block and nap anchor at the issue; spin
still anchors at the completion. picked -> completed does not depend on the anchor.

Reads the hot path's GPU request stages (paam_stages_hot.csv.xz, chain priority 100) and each
run's summary.json (case study 2 and case study 1), writes stages.txt and fig_stages.png.

    PYTHONPATH=python python docs/results/eval-h100/wait-anchor-2026-11-24/stages.py
"""
import csv
import json
import lzma
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
BEFORE = HERE.parent / "cuda-wait-2026-11-24"
# (directory, run, machine, wait mode, anchor)
RUNS = [(BEFORE, "s4", "S", "spin", "completion"), (BEFORE, "b4", "S", "block", "completion"),
        (BEFORE, "n2", "S", "nap", "completion"), (BEFORE, "s5", "T", "spin", "completion"),
        (BEFORE, "n3", "T", "nap", "completion"),
        (HERE, "n1", "U", "nap", "issue"), (HERE, "s1", "U", "spin", "completion"),
        (HERE, "b1", "U", "block", "issue"), (HERE, "s2", "U", "spin", "completion"),
        (HERE, "n2", "U", "nap", "issue"),
        (HERE / "V", "s1", "V", "spin", "completion"), (HERE / "V", "n1", "V", "nap", "issue"),
        (HERE / "V", "n2", "V", "nap", "issue"), (HERE / "V", "s2", "V", "spin", "completion"),
        (HERE / "V", "s3", "V", "spin", "completion"), (HERE / "V", "n3", "V", "nap", "issue")]
# back to back on machine V, for the default wait: (spin, nap)
V_PAIRS = (("s1", "n1"), ("s2", "n2"), ("s3", "n3"))
CS1 = (("c1n", "nap"), ("c1s", "spin"), ("c1n2", "nap"))
LAUNCH, KERNEL, DONE = "picked->device_start_us", "device_start->device_end_us", "device_end->completed_us"


def stages(path: Path) -> dict[str, np.ndarray]:
    with lzma.open(path, "rt") as f:
        rows = list(csv.DictReader(f))
    out = {k: np.array([float(r[k]) for r in rows]) for k in (LAUNCH, KERNEL, DONE)}
    out["total"] = out[LAUNCH] + out[KERNEL] + out[DONE]
    return out


def main() -> None:
    lines = [__doc__.split("\n\n")[0].replace("\n", " "), "",
             "Case study 2, 4ST, PAAM, 2.5 ms segments, 150 s per run; the hot path's GPU requests, "
             "p50 / p99 us (total = picked -> completed, without the kernel's 2.58 ms: total - kernel)",
             f"{'run':<10}{'machine':<8}{'wait':<6}{'anchor':<11}{'n':>6}  {'launch':>14}  "
             f"{'completion':>14}  {'total-kernel':>14}  hot path max ms  drops  steal ms/s (all CPUs)"]
    by_mode: dict[tuple[str, str], list[float]] = {}
    for d, run, machine, wait, anchor in RUNS:
        s = stages(d / run / "paam_stages_hot.csv.xz")
        r = json.loads((d / run / "summary.json").read_text())["results"]["4ST"]["PAAM"]
        extra = s["total"] - s[KERNEL]
        cell = lambda v: f"{np.percentile(v, 50):6.1f} / {np.percentile(v, 99):6.1f}"  # noqa: E731
        tag = f"{'V/' if d.name == 'V' else ''}{run}{'*' if d == BEFORE else ''}"
        lines.append(f"{tag:<10}{machine:<8}{wait:<6}{anchor:<11}{len(s[LAUNCH]):>6}  {cell(s[LAUNCH])}  "
                     f"{cell(s[DONE])}  {cell(extra)}  {r['hot_path_ms']['max']:15.1f}  {r['drops']['total']:5d}"
                     f"  {r['host']['steal_ms_per_s']['mean']:10.0f}")
        key = (wait, "before" if d == BEFORE else "after")
        by_mode.setdefault(key, []).append((np.percentile(s[LAUNCH], 50), np.percentile(s[DONE], 50),
                                            np.percentile(extra, 50)))
    lines += ["(* = fifteenth session, ../cuda-wait-2026-11-24/)", "",
              "Machine V, spin against nap back to back: hot path mean / p99 / max ms, drops, "
              "CPUs busy, steal on the executors' vCPUs ms/s"]
    for sp, nap in V_PAIRS:
        cells = []
        for run in (sp, nap):
            r = json.loads((HERE / "V" / run / "summary.json").read_text())["results"]["4ST"]["PAAM"]
            h, hp = r["host"], r["hot_path_ms"]
            cells.append(f"{run} {hp['mean']:.1f} / {hp['p99']:.1f} / {hp['max']:.1f}, {r['drops']['total']}, "
                         f"{h['busy_ms_per_s']['mean'] / 1000:.2f}, {h['steal_ms_per_s_executor_cpus']['mean']:.0f}")
        lines.append("  " + "  |  ".join(cells))
    lines += ["",
              "Medians of the runs' p50s, us: launch, completion, total - kernel"]
    for key in sorted(by_mode):
        v = np.median(np.array(by_mode[key]), axis=0)
        lines.append(f"  {key[0]:<6}{key[1]:<7} {v[0]:6.1f} {v[1]:6.1f} {v[2]:6.1f}   ({len(by_mode[key])} runs)")

    lines += ["", "Case study 1, PAAM only, 100 s after a 30 s calibration run, --server-poll-us always "
              "--server-pin; chain 1, ms"]
    for run, wait in CS1:
        j = json.loads((HERE / run / "summary.json").read_text())
        c1 = j["results"]["chain1"]
        c1 = c1.get("PAAM", c1)
        bound = j["bound_ms"]["chain1"]
        mx = c1["max"] if "max" in c1 else c1["latency_ms"]["max"]
        lines.append(f"  {run:<5} {wait:<5} max {mx:6.1f}  bound {bound:6.1f}  "
                     f"{'held' if mx <= bound else 'OVER'}  epsilon {j['epsilon_ms']:.3f} ms")
    (HERE / "stages.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

    fig, ax = plt.subplots(figsize=(8, 4))
    modes = ("spin", "nap", "block")
    x = np.arange(len(modes))
    for k, (when, hatch) in enumerate((("before", ""), ("after", "//"))):
        launch = [np.median([v[0] for v in by_mode.get((m, when), [(np.nan,) * 3])]) for m in modes]
        done = [np.median([v[1] for v in by_mode.get((m, when), [(np.nan,) * 3])]) for m in modes]
        pos = x + (k - 0.5) * 0.38
        ax.bar(pos, launch, 0.36, color="tab:blue", hatch=hatch, edgecolor="k",
               label=f"launch ({when})")
        ax.bar(pos, done, 0.36, bottom=launch, color="tab:orange", hatch=hatch, edgecolor="k",
               label=f"completion ({when})")
    ax.set_xticks(x, [f"{m}\n(anchor: {'completion' if m == 'spin' else 'completion -> issue'})"
                      for m in modes])
    ax.set_ylabel("p50 per stage, µs (median over runs)")
    ax.set_title("Hot-path GPU requests, case study 2 4ST, H100: launch + completion\n"
                 "before (fifteenth session) and after anchoring a sleeping wait at the issue")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(HERE / "fig_stages.png", dpi=110)


if __name__ == "__main__":
    main()
