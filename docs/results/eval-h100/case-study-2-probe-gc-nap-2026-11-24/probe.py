"""--cpu-probe against E0's own CPU time outside callbacks and the KPI, per run (hot_path.csv).

Usage: python probe.py [--plot FIG.png] RUN_DIR... (each holding hot_path.csv or .csv.xz)."""
import csv
import lzma
import sys
from pathlib import Path

import numpy as np


def load(d: Path):
    f = d / "hot_path.csv"
    fh = open(f) if f.exists() else lzma.open(d / "hot_path.csv.xz", "rt")
    rows = [r for r in csv.DictReader(fh) if r.get("e0_probe_c_us")]
    col = lambda k: np.array([float(r[k]) for r in rows])  # noqa: E731
    return {k: col(k) for k in ("latency_ms", "e0_outside_cpu_ms", "e0_probe_c_us",
                                "e0_probe_py_us", "e0_callbacks", "e0_inside_beyond_burn_ms")}


def plot(runs: list, out: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, x in runs:
        per = x["e0_outside_cpu_ms"] / x["e0_callbacks"] * 1e3
        a.scatter(x["e0_probe_c_us"], per, s=3, alpha=0.35, label=name)
        b.scatter(x["e0_probe_c_us"], x["latency_ms"], s=3, alpha=0.35, label=name)
    a.set_xlabel("fixed C work on E0 (µs, median of the instance's callbacks)")
    a.set_ylabel("E0's own CPU outside callbacks per callback (µs)")
    b.set_xlabel("fixed C work on E0 (µs, median of the instance's callbacks)")
    b.set_ylabel("hot-path latency (ms)")
    b.legend(markerscale=4, fontsize=8)
    fig.suptitle("Case study 2, 4ST PAAM, 2.5 ms segments, H100 guest, 2026-11-24: "
                 "when the same work takes longer, so does everything else", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main() -> None:
    args = sys.argv[1:]
    out = None
    if args[:1] == ["--plot"]:
        out, args = args[1], args[2:]
    runs = []
    for arg in args:
        d = Path(arg)
        x = load(d)
        runs.append((f"{d.parent.name}/{d.name}", x))
        n = len(x["latency_ms"])
        print(f"{d.parent.name}/{d.name}: {n} instances")
        q = np.quantile(x["e0_outside_cpu_ms"], [0, 0.5, 0.9, 0.99, 1])
        print("  E0's own CPU outside callbacks (ms) by band -> instances, C / Python probe "
              "median (us), callbacks median, CPU beyond the burn median (ms), KPI median (ms)")
        for lo, hi, name in ((q[0], q[1], "lower half"), (q[1], q[2], "50-90%"),
                             (q[2], q[3], "90-99%"), (q[3], q[4] + 1, "top 1%")):
            m = (x["e0_outside_cpu_ms"] >= lo) & (x["e0_outside_cpu_ms"] < hi)
            print(f"    {name:10s} {lo:5.1f}-{min(hi, q[4]):5.1f}: {m.sum():5d}, "
                  f"{np.median(x['e0_probe_c_us'][m]):5.1f} / "
                  f"{np.median(x['e0_probe_py_us'][m]):5.1f}, "
                  f"{np.median(x['e0_callbacks'][m]):4.0f}, "
                  f"{np.median(x['e0_inside_beyond_burn_ms'][m]):4.1f}, "
                  f"{np.median(x['latency_ms'][m]):5.1f}")
        r = lambda a, b: np.corrcoef(x[a], x[b])[0, 1]  # noqa: E731
        print(f"  r: C probe ~ outside CPU {r('e0_probe_c_us', 'e0_outside_cpu_ms'):.2f}, "
              f"Python probe ~ outside CPU {r('e0_probe_py_us', 'e0_outside_cpu_ms'):.2f}, "
              f"C ~ Python {r('e0_probe_c_us', 'e0_probe_py_us'):.2f}, "
              f"KPI ~ C probe {r('latency_ms', 'e0_probe_c_us'):.2f}, "
              f"KPI ~ outside CPU {r('latency_ms', 'e0_outside_cpu_ms'):.2f}, "
              f"callbacks ~ outside CPU {r('e0_callbacks', 'e0_outside_cpu_ms'):.2f}")
        # outside CPU per callback, against the probe: the same work per gap, slower?
        per = x["e0_outside_cpu_ms"] / x["e0_callbacks"]
        slow = x["latency_ms"] >= np.quantile(x["latency_ms"], 0.99)
        print(f"  outside CPU per callback (ms) ~ C probe r "
              f"{np.corrcoef(per, x['e0_probe_c_us'])[0, 1]:.2f}; slowest 1% of the KPI: C probe "
              f"{np.median(x['e0_probe_c_us'][slow]):.1f} against "
              f"{np.median(x['e0_probe_c_us']):.1f} us at the median")
    if out:
        plot(runs, out)


if __name__ == "__main__":
    main()
