"""How often, and for how long, the CPU backend's best-effort worker (paamd-w0.5.0, nice 19)
ran on the device core (CPU 1) ahead of a runnable SCHED_FIFO bucket worker, from the
sched_switch events of that core (ftrace, CLOCK_MONOTONIC, t_s from the run's t0), and chain 1's
latency, in r1 (paamd before the preemption points, code 3133c5d), r2 (a spin waits at them while
a more urgent kernel runs, 37e09d4) and r3 (also while more urgent requests wait in paamd's
queue, the commit after). Writes fair_server.txt.

    python docs/results/eval-vm/case-study-1-fair-server-2026-11-24/fair_server.py
"""
import csv
import lzma
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def pct(v, q):
    return v[min(len(v) - 1, int(len(v) * q))]


def main() -> None:
    lines = [__doc__.split("\n\n")[0].replace("\n", " "), ""]
    for run in ("r1", "r2", "r3"):
        with lzma.open(HERE / run / "device_core_switches.csv.xz", "rt") as f:
            ev = list(csv.DictReader(f))
        spans, per_s, exits = [], Counter(), Counter()
        for a, b in zip(ev, ev[1:]):
            if (a["next_comm"].startswith("paamd-w") and a["next_prio"] == "139"
                    and int(a["prev_prio"]) < 100 and a["prev_state"].startswith("R")):
                d = float(b["t_s"]) - float(a["t_s"])
                spans.append(d * 1e6)
                per_s[int(float(a["t_s"]))] += d * 1e3
                exits[b["prev_state"]] += 1
        spans.sort()
        secs = [per_s[s] for s in range(0, 90)]
        with lzma.open(HERE / run / "latency.csv.xz", "rt") as f:
            lat = sorted(float(r["latency_ms"]) for r in csv.DictReader(f)
                         if r["chain"] == "chain1")
        lines += [
            f"{run}: the best-effort worker ran ahead of a runnable SCHED_FIFO worker {len(spans)} "
            f"times; for (us) p50 {pct(spans, .5):.0f}, p90 {pct(spans, .9):.0f}, max "
            f"{spans[-1]:.0f}, {sum(x > 100 for x in spans)} over 100 us (their time "
            f"{sum(x for x in spans if x > 100) / 1e3:.0f} ms); {sum(spans) / 1e3:.0f} ms in all, "
            f"per second mean "
            f"{sum(secs) / len(secs):.1f} and max {max(secs):.1f} ms; it then blocked "
            f"{exits['S']} times and was preempted {exits['R']}",
            f"    chain1: {len(lat)} instances, p50 {pct(lat, .5):.2f}, p90 {pct(lat, .9):.2f}, "
            f"p99 {pct(lat, .99):.2f}, max {lat[-1]:.2f} ms, {sum(x > 12 for x in lat)} over 12 ms"]
    lines += ["", "The pair again without the trace (rep-old: paamd at 62a042b, rep-new: at "
              "b0b94f8, both built without CUDA, 2026-11-24 07:25-07:31 UTC):"]
    for run in ("rep-old", "rep-new"):
        with lzma.open(HERE / run / "latency.csv.xz", "rt") as f:
            lat = sorted(float(r["latency_ms"]) for r in csv.DictReader(f)
                         if r["chain"] == "chain1")
        lines.append(f"    {run} chain1: {len(lat)} instances, p50 {pct(lat, .5):.2f}, p90 "
                     f"{pct(lat, .9):.2f}, p99 {pct(lat, .99):.2f}, max {lat[-1]:.2f} ms, "
                     f"{sum(x > 12 for x in lat)} over 12 ms")
    (HERE / "fair_server.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
