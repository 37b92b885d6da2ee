"""Links this run's hot-path latency to what the hypervisor stole from the guest's CPUs.

The run predates case study 2's own /proc/stat sampler (host_stat.csv): scripts/device_long_run.sh
sampled /proc/stat once a second with Unix times ("t <unix time>", then the cpu lines) in
proc-stat.txt.gz. Each run's start is placed from the samples, as the first second in which the
hot path's executor core (E0, CPU 2) is more than 30% busy after the run was launched (the
launch times are in progress.txt), so the alignment is good to about a second; the split below
widens each instance's window by one sample each side for that reason.

    PYTHONPATH=<paam> python steal_link.py        # prints the table, draws fig11d_host_steal.png
"""
import csv
import gzip
import lzma
from pathlib import Path

import numpy as np

from paam.eval import common

HERE = Path(__file__).resolve().parent
E0_CPU = 2


def samples():
    t, stats, cur = [], [], []
    for line in gzip.open(HERE / "proc-stat.txt.gz", "rt"):
        if line.startswith("t "):
            if cur:
                stats.append(common.parse_proc_stat("".join(cur)))
            t.append(int(line.split()[1]))
            cur = []
        else:
            cur.append(line)
    stats.append(common.parse_proc_stat("".join(cur)))
    return common.proc_stat_deltas(t, stats, 10.0)  # USER_HZ 100 there


def launches():
    out = {}
    for line in (HERE / "progress.txt").read_text().splitlines():
        f = line.split()
        if len(f) > 2 and f[1] == "start":
            out[f[0]] = int(f[2])
    return out


def main():
    t, cpus, busy, steal = samples()
    panels, rows = [], []
    for label, method in (("ros2", "ROS 2"), ("picas", "PiCAS"), ("paam", "PAAM")):
        launched = launches()[label]
        after = np.where(t > launched)[0]
        t0 = t[after[busy[after, cpus.index(E0_CPU)] > 300][0]] - 1
        with lzma.open(HERE / label / "hot_path.csv.xz", "rt") as f:
            hot = list(csv.DictReader(f))
        ends = np.array([float(r["t_s"]) for r in hot])
        lat = np.array([float(r["latency_ms"]) for r in hot])
        drops = np.array([int(r["drops"]) for r in hot])
        last = t0 + ends.max() + 2
        w = (t > t0) & (t <= last)
        ht, st = (t[w] - t0).astype(np.float64), steal[w]
        around = common.steal_around((ends * 1e9).astype(np.int64), lat,
                                     (ht * 1e9).astype(np.int64), st)
        sp = common.split_by_steal(lat, around)
        quiet = around <= sp["quiet_steal_ms"]
        per_s = st.sum(axis=1)
        rows.append([f"4ST {method}", f"{per_s.mean():.0f} / {per_s.max():.0f}",
                     f"{100 * (per_s <= common.QUIET_STEAL_MS).mean():.0f}%",
                     f"{sp['quiet']['n']}", common.fmt(sp["quiet"]["p99"]),
                     common.fmt(sp["quiet"]["max"]), str(int(drops[quiet].sum())),
                     f"{sp['noisy']['n']}", common.fmt(sp["noisy"]["p99"]),
                     common.fmt(sp["noisy"]["max"]), str(int(drops[~quiet].sum())),
                     common.fmt(sp["correlation"], 2)])
        panels.append((f"4ST {method}", ends, lat, ht, per_s))
    print(f"quiet: at most {common.QUIET_STEAL_MS:g} ms stolen from all 16 CPUs in every second "
          "around the instance (its span, one sample each side)")
    print(common.table([["run", "steal ms/s mean / max", "quiet s", "quiet n", "p99", "max",
                         "drops", "noisy n", "p99", "max", "drops", "r(lat, steal)"]] + rows,
                       right=range(1, 12)))
    common.plot_host(panels, HERE / "fig11d_host_steal.png",
                     "Case study 2, 4ST, GPU segment 2.5 ms, lent H100 2026-11-23: hot-path "
                     "latency over time, and what the host stole from the CPUs")


if __name__ == "__main__":
    main()
