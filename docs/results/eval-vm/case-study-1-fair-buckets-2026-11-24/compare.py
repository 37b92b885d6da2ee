"""Case study 1's chain 1 on the 2-core VM with paamd's best-effort buckets kept off SCHED_FIFO
(--fair-buckets 2, what `paam eval case-study-1` now passes: a1, a2, a3) and with paamd's
default (--fair-buckets 1: be1's bucket SCHED_FIFO; o1, o2, o3), alternating, the kernel's RT
throttling at its default (950000 of 1000000 us), seventeenth session, 2026-11-24. PAAM only,
90 s per run, no calibration run (each run's bound takes epsilon from the run itself).

Then --lock-memory (l1-l3 against n1-n3, alternating, 10:57-11:07 UTC; m1-m3 with
--lock-memory also routing Python's objects through malloc, 11:07-11:12 UTC), all at
--fair-buckets 2; and pause_idle.json (pauseprobe.py on the idle VM).

Reads each run's latency.csv.xz, stages_chain1.csv.xz and summary.json; writes compare.txt and
fig_fair_buckets.png.

    python docs/results/eval-vm/case-study-1-fair-buckets-2026-11-24/compare.py
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
RUNS = ("a1", "o1", "a2", "o2", "a3", "o3")  # in the order they ran


def rows(run: str, name: str) -> list[dict]:
    with lzma.open(HERE / run / name, "rt") as f:
        return list(csv.DictReader(f))


def episodes(t: np.ndarray) -> int:
    """Instances over 12 ms grouped into episodes: those within 1 s of each other count once."""
    t = np.sort(t)
    return int(len(t) > 0) + int((np.diff(t) > 1.0).sum())


def main() -> None:
    head = (f"{'run':<5}{'fair':>5}{'n':>6}{'p50':>7}{'p99':>7}{'max':>7}{'> 12 ms':>9}"
            f"{'episodes':>10}{'missed':>8}{'bound':>8}{'eps':>8}{'wake max':>10}"
            f"{'chain3 p99':>12}{'be1 p99':>9}{'be1 skip':>10}")
    lines = [__doc__.split("\n\n")[0].replace("\n", " "), "",
             "fair: paamd --fair-buckets; '> 12 ms': chain 1 instances over 12 ms; episodes: those "
             "within 1 s of each other counted once; wake max: the largest client-wake stage of a "
             "chain 1 request (paamd's completion to the executor running again), ms", "", head]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.2))
    totals: dict[str, list[int]] = {}
    for k, run in enumerate(RUNS):
        lat_rows = rows(run, "latency.csv.xz")
        s = json.loads((HERE / run / "summary.json").read_text())
        fair = s["fair_buckets"]["gpu0"]
        by = {}
        for r in lat_rows:
            by.setdefault(r["chain"], []).append((float(r["latency_ms"]), float(r["t_s"])))
        c1 = np.array(by["chain1"])
        lat, t = c1[:, 0], c1[:, 1]
        slow = lat > 12
        wake = max(float(r["client_wake_us"]) for r in rows(run, "stages_chain1.csv.xz")) / 1e3
        res = s["results"]
        lines.append(
            f"{run:<5}{fair:>5}{len(lat):>6}{np.percentile(lat, 50):7.2f}{np.percentile(lat, 99):7.2f}"
            f"{lat.max():7.1f}{int(slow.sum()):>9}{episodes(t[slow]):>10}"
            f"{res['chain1']['PAAM']['missed']:>8}{s['bound_ms']['chain1']:8.1f}"
            f"{s['epsilon_ms']:8.2f}{wake:10.2f}"
            f"{np.percentile([x for x, _ in by['chain3']], 99):12.1f}"
            f"{np.percentile([x for x, _ in by['be1']], 99):9.1f}{res['be1']['PAAM']['missed']:>10}")
        tot = totals.setdefault(f"--fair-buckets {fair}", [0, 0, 0, 0.0])
        tot[0] += len(lat)
        tot[1] += int(slow.sum())
        tot[2] += episodes(t[slow])
        tot[3] = max(tot[3], float(lat.max()))
        color = "tab:green" if fair == 2 else "tab:red"
        x = np.sort(lat)[::-1]
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color=color,
                ls=("-", "--", ":")[k // 2], label=f"{run}: --fair-buckets {fair}")
        bx.scatter(t[slow], np.full(int(slow.sum()), k), s=np.clip(lat[slow], 12, 100) * 2,
                   color=color, alpha=0.7)
    lines += ["", "In all: " + "; ".join(
        f"{key}: {n} instances, {o} over 12 ms in {e} episodes, the largest {m:.1f} ms"
        for key, (n, o, e, m) in totals.items())]
    lines += ["", "--lock-memory (all at --fair-buckets 2); faults: the executors' minor page faults in "
              "the measured 90 s", "",
              f"{'run':<5}{'lock':<22}{'p99':>7}{'max':>7}{'> 12 ms':>9}{'episodes':>10}{'missed':>8}"
              f"{'faults':>8}"]
    for run, lock in (("l1", "mlockall+malloc"), ("n1", "no"), ("l2", "mlockall+malloc"), ("n2", "no"),
                      ("l3", "mlockall+malloc"), ("n3", "no"), ("m1", "+ PYTHONMALLOC=malloc"),
                      ("m2", "+ PYTHONMALLOC=malloc"), ("m3", "+ PYTHONMALLOC=malloc")):
        s = json.loads((HERE / run / "summary.json").read_text())
        c1 = np.array([(float(r["latency_ms"]), float(r["t_s"])) for r in rows(run, "latency.csv.xz")
                       if r["chain"] == "chain1"])
        lat, t = c1[:, 0], c1[:, 1]
        slow = lat > 12
        faults = sum(v[0] for v in s["page_faults"]["PAAM"]["minor_major"].values())
        lines.append(f"{run:<5}{lock:<22}{np.percentile(lat, 99):7.2f}{lat.max():7.1f}{int(slow.sum()):>9}"
                     f"{episodes(t[slow]):>10}{s['results']['chain1']['PAAM']['missed']:>8}{faults:>8}")
    pause = json.loads((HERE / "pause_idle.json").read_text())
    lines += ["", "pause_idle.json: the idle VM, 180 s, a SCHED_FIFO thread per CPU sleeping 1 ms at a "
              "time; wake-ups more than 5 ms late (s into the probe, ms late):"]
    lines += [f"  CPU {cpu}: {late}" for cpu, late in pause.items()]
    (HERE / "compare.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    ax.set_yscale("log")
    ax.set_xlim(7.5, None)
    ax.set_xlabel("chain 1 latency, ms")
    ax.set_ylabel("share of instances at least this late")
    ax.set_title("chain 1's tail, 90 s per run")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    bx.set_yticks(range(len(RUNS)), RUNS)
    bx.set_xlabel("time in the run, s")
    bx.set_title("chain 1 instances over 12 ms (size: latency)")
    bx.grid(alpha=0.3)
    fig.suptitle("Case study 1 on the 2-core VM (CPU backend, x0.25, RT throttling at the default): "
                 "best-effort buckets off SCHED_FIFO (green) or not (red)", fontsize=10)
    fig.tight_layout()
    fig.savefig(HERE / "fig_fair_buckets.png", dpi=110)


if __name__ == "__main__":
    main()
