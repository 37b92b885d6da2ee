"""Case study 1's chain 1 on the 2-core VM with the kernel's RT throttling at its default
(kernel.sched_rt_runtime_us = 950000 of 1000000: d1, d2, and t1 under ftrace) and lifted (-1:
u1, u2, and t3 under ftrace), sixteenth session, 2026-11-24. PAAM only, 90 s per run, no
calibration run, so each run's bound takes ε from the run itself. t4 (RT throttling off,
traced) ran paamd at 41f0896, whose CPU device also parks a best-effort kernel while a more
urgent bucket's request is taken but not finished; the others at 93034e8. "In all" is the six
runs at 93034e8.

Reads each run's latency.csv.xz and summary.json; writes compare.txt and fig_rt_throttling.png.

    python docs/results/eval-vm/case-study-1-rt-throttling-2026-11-24/compare.py
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
# run -> (RT throttling, traced, paamd's code); in the order they ran
RUNS = {"t1": ("default", True, "93034e8"), "t3": ("off", True, "93034e8"),
        "u1": ("off", False, "93034e8"), "d1": ("default", False, "93034e8"),
        "u2": ("off", False, "93034e8"), "d2": ("default", False, "93034e8"),
        "t4": ("off", True, "41f0896")}


def chain1(run: str) -> np.ndarray:
    with lzma.open(HERE / run / "latency.csv.xz", "rt") as f:
        return np.array([float(r["latency_ms"]) for r in csv.DictReader(f) if r["chain"] == "chain1"])


def main() -> None:
    lines = [__doc__.split("\n\n")[0].replace("\n", " "), "",
             f"{'run':<5}{'RT throttling':<15}{'traced':<8}{'paamd':<9}{'n':>6}{'p50':>7}{'p99':>7}{'max':>7}"
             f"{'> 10 ms':>9}{'> 12 ms':>9}{'bound':>8}{'> bound':>9}{'epsilon':>9}"]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    totals: dict[str, list[int]] = {"default": [0, 0, 0], "off": [0, 0, 0]}
    for run, (rt, traced, code) in RUNS.items():
        lat = chain1(run)
        s = json.loads((HERE / run / "summary.json").read_text())
        bound = s["bound_ms"]["chain1"]
        over = int((lat > bound).sum())
        lines.append(f"{run:<5}{rt:<15}{'yes' if traced else 'no':<8}{code:<9}{len(lat):>6}"
                     f"{np.percentile(lat, 50):7.2f}{np.percentile(lat, 99):7.2f}{lat.max():7.2f}"
                     f"{int((lat > 10).sum()):>9}{int((lat > 12).sum()):>9}{bound:8.1f}{over:>9}"
                     f"{s['epsilon_ms']:9.3f}")
        if code == "93034e8":
            t = totals[rt]
            t[0] += len(lat)
            t[1] += int((lat > 12).sum())
            t[2] = max(t[2], int(round(lat.max() * 10)))
        x = np.sort(lat)[::-1]
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post",
                color="tab:blue" if code != "93034e8" else "tab:red" if rt == "default" else "tab:green",
                ls="-" if traced else "--",
                label=f"{run}: RT throttling {rt}{', traced' if traced else ''}"
                      f"{', paamd ' + code if code != '93034e8' else ''}")
    lines += ["", "In all: " + "; ".join(
        f"RT throttling {rt}: {n} instances, {o} over 12 ms, the largest {m / 10:.1f} ms"
        for rt, (n, o, m) in totals.items())]
    lines += ["", "ab2/: RT throttling lifted, paamd at 93034e8 (o*: the preemption points look at queued "
              "requests) and at ffd1e02 (n*: also at requests taken and not finished), alternating; "
              "p99 / max ms, activations skipped"]
    for run in ("o1", "n1", "o2", "n2"):
        with lzma.open(HERE / "ab2" / run / "latency.csv.xz", "rt") as f:
            rows = list(csv.DictReader(f))
        res = json.loads((HERE / "ab2" / run / "summary.json").read_text())["results"]
        cells = []
        for ch in ("chain1", "chain2", "chain3", "be1", "be2"):
            lat = np.array([float(r["latency_ms"]) for r in rows if r["chain"] == ch])
            cells.append(f"{ch} {np.percentile(lat, 99):.1f} / {lat.max():.1f}"
                         + (f", {res[ch]['PAAM']['missed']} skipped" if ch.startswith("be") else ""))
        lines.append(f"  {run}: " + "; ".join(cells))
    lines += ["", "q4/: 4 buckets instead of 6 (case_study_1_4buckets.yaml: both best-effort chains in the "
              "lowest, non-SCHED_FIFO bucket), RT throttling at the default, paamd ffd1e02"]
    for run in ("q1", "q2"):
        with lzma.open(HERE / "q4" / run / "latency.csv.xz", "rt") as f:
            lat = np.array([float(r["latency_ms"]) for r in csv.DictReader(f) if r["chain"] == "chain1"])
        s = json.loads((HERE / "q4" / run / "summary.json").read_text())
        lines.append(f"  {run}: chain1 p50 {np.percentile(lat, 50):.2f}, p99 {np.percentile(lat, 99):.2f}, "
                     f"max {lat.max():.2f} ms, {int((lat > 12).sum())} over 12 ms, bound "
                     f"{s['bound_ms']['chain1']:.1f}, epsilon {s['epsilon_ms']:.3f} ms")
    (HERE / "compare.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    ax.set_yscale("log")
    ax.set_xlim(7.5, None)
    ax.set_xlabel("chain 1 latency, ms")
    ax.set_ylabel("share of instances at least this late")
    ax.set_title("Case study 1 on the 2-core VM (CPU backend, ×0.25): chain 1's tail\n"
                 "with the kernel's RT throttling at its default and lifted (90 s per run)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(HERE / "fig_rt_throttling.png", dpi=110)


if __name__ == "__main__":
    main()
