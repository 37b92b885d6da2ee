"""paamd's CUDA workers spinning (the default) against blocking in the driver (--cuda-wait
block), on one lent H100 (machine R), one run after another: case study 2 (4ST, PAAM, 2.5 ms
segments, 150 s) in the order s1 b1 s2 b2 | b3 s3, then case study 1 (PAAM, 100 s after a 30 s
calibration) c1s, c1b between the two batches. Reads each run's summary.json, the hot path's
GPU request stages (paam_stages_hot_settings.csv.xz), and /proc/stat (one sample a second) with
the runs' start and end from the logs' progress files. Writes compare.txt and fig_cuda_wait.png.

    PYTHONPATH=python python docs/results/eval-h100/cuda-wait-2026-11-24/compare.py
"""
import csv
import gzip
import json
import lzma
import tarfile
from datetime import datetime, timezone
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from paam.eval import common  # noqa: E402

HERE = Path(__file__).resolve().parent
BATCHES = (("logs-R1.tgz", "proc-stat-R1.txt.gz"), ("logs-R2.tgz", "proc-stat-R2.txt.gz"))
CS2 = ("s1", "b1", "s2", "b2", "b3", "s3")
PAIRS = (("s1", "b1"), ("s2", "b2"), ("s3", "b3"))  # back to back on the machine
EXECUTOR_CPUS = (2, 3, 4, 5)
TPU_CPU = 15
STAGES = ("picked->device_start_us", "device_end->completed_us", "completed->woken_us")


def mode(run: str) -> str:
    return "block" if run.startswith("b") or run == "c1b" else "spin"


def samples(path: Path) -> list[tuple[int, dict]]:
    """(epoch s, common.parse_proc_stat of that sample) for each sample of the file."""
    out, text = [], []
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith("t "):
                if out:
                    out[-1] = (out[-1][0], common.parse_proc_stat("".join(text)))
                out.append((int(line.split()[1]), {}))
                text = []
            else:
                text.append(line)
    if out:
        out[-1] = (out[-1][0], common.parse_proc_stat("".join(text)))
    return [s for s in out if s[1]]


def windows(pack: Path) -> dict[str, tuple[int, int]]:
    """label -> (start, end) epoch s, from the progress file."""
    with tarfile.open(pack) as t:
        member = next(m for m in t.getmembers() if m.name.lstrip("./") == "progress")
        lines = t.extractfile(member).read().decode().splitlines()
    starts, runs = {}, {}
    for line in lines:
        p = line.split()
        if len(p) >= 3 and p[1] == "start":
            starts[p[0]] = int(p[2])
        elif len(p) >= 3 and p[1] == "end":
            runs[p[0]] = (starts[p[0]], int(p[2]))
    return runs


def host_series():
    """(seconds ends [n], CPUs, busy ms [n, cpus], steal ms [n, cpus]) over both batches, and
    every run's window."""
    ends, busy, steal, wins, cpus = [], [], [], {}, None
    for pack, stat in BATCHES:
        recs = samples(HERE / stat)
        e, cpus, b, s = common.proc_stat_deltas([t for t, _ in recs], [r for _, r in recs], 10.0)
        ends.append(e)
        busy.append(b)
        steal.append(s)
        wins.update(windows(HERE / pack))
    return np.concatenate(ends), cpus, np.concatenate(busy), np.concatenate(steal), wins


def per_cpu(ends, busy, steal, t0, t1):
    """Mean busy and stolen ms per s of each CPU between t0 + 8 and t1 - 3."""
    m = (ends >= t0 + 8) & (ends <= t1 - 3)
    return busy[m].mean(axis=0), steal[m].mean(axis=0)


def stages(run: str) -> dict[str, np.ndarray]:
    with lzma.open(HERE / run / "paam_stages_hot_settings.csv.xz", "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["chain_priority"] == "100"]
    return {k: np.array([float(r[k]) for r in rows]) for k in STAGES}


def main() -> None:
    ends, cpus, busy, steal, wins = host_series()
    paamd_cpus = [c for c in cpus if c not in EXECUTOR_CPUS and c != TPU_CPU]
    lines = [__doc__.split("\n\n")[0].replace("\n", " "), ""]
    lines.append("Case study 2, 4ST, PAAM, 2.5 ms segments, 150 s per run, in the order run:")
    head = (f"{'run':4} {'wait':5} {'start UTC':9} {'n':>5} {'p99':>6} {'max':>6} {'drops':>5} "
            f"{'due max':>7} {'steal':>5} {'ex':>4} {'paamd':>5} {'busy':>5} {'pdbusy':>6} "
            f"{'vCPUs':>5} {'quiet n / max':>13}")
    lines += [head, "-" * len(head)]
    per_run = {}
    for run in CS2:
        s = json.loads((HERE / run / "summary.json").read_text())["results"]["4ST"]["PAAM"]
        t0, t1 = wins[run]
        b, st = per_cpu(ends, busy, steal, t0, t1)
        idx = {c: i for i, c in enumerate(cpus)}
        r = {"hot": s["hot_path_ms"], "drops": s["drops"]["total"],
             "due": s["hot_path_from_due_ms"]["max"], "steal": st.sum(),
             "steal_ex": sum(st[idx[c]] for c in EXECUTOR_CPUS),
             "steal_pd": sum(st[idx[c]] for c in paamd_cpus), "busy": b.sum() / 1000,
             "busy_pd": sum(b[idx[c]] for c in paamd_cpus) / 1000,
             "vcpus": len(s["host"]["active_cpus"]),
             "quiet": s["hot_path_by_host_steal"]["quiet"], "t0": t0, "t1": t1}
        per_run[run] = r
        q = r["quiet"]
        when = datetime.fromtimestamp(t0, timezone.utc).strftime("%H:%M:%S")
        lines.append(
            f"{run:4} {mode(run):5} {when:9} {r['hot']['n']:>5} {r['hot']['p99']:>6.1f} "
            f"{r['hot']['max']:>6.1f} {r['drops']:>5} {r['due']:>7.1f} {r['steal']:>5.0f} "
            f"{r['steal_ex']:>4.0f} {r['steal_pd']:>5.0f} {r['busy']:>5.2f} {r['busy_pd']:>6.2f} "
            f"{r['vcpus']:>5} {q['n']:>6} / {common.fmt(q.get('max'), 1):>5}")
    lines += ["", "steal: ms/s stolen from all 16 vCPUs, ex: from the executors' (2-5), paamd: "
              f"from paamd's ({','.join(map(str, paamd_cpus))}); busy: CPUs the guest kept busy, "
              "pdbusy: of them on paamd's vCPUs; vCPUs: busy at least 50 ms/s; quiet: hot-path "
              "instances where the host stole at most 50 ms/s (n / max ms). A run's first 8 s and "
              "last 3 s are left out of the /proc/stat figures.", ""]
    lines.append("Back-to-back pairs (spin, block): change of block against spin")
    for a, b in PAIRS:
        x, y = per_run[a], per_run[b]
        lines.append(f"  {a}/{b}: max {x['hot']['max']:.1f} -> {y['hot']['max']:.1f}, p99 "
                     f"{x['hot']['p99']:.1f} -> {y['hot']['p99']:.1f}, drops {x['drops']} -> "
                     f"{y['drops']}, steal on the executors' vCPUs {x['steal_ex']:.0f} -> "
                     f"{y['steal_ex']:.0f} ms/s, CPUs busy {x['busy']:.2f} -> {y['busy']:.2f}")
    lines += ["", "The hot path's GPU requests (chain priority 100), paamd's stages, us: "
              "p50 / p99 / max"]
    for run in CS2:
        st = stages(run)
        lines.append(f"  {run} {mode(run):5} " + " | ".join(
            f"{k[:-3]} {np.percentile(v, 50):.0f} / {np.percentile(v, 99):.0f} / {v.max():.0f}"
            for k, v in st.items()))
    lines += ["", "Case study 1, PAAM only, 100 s after a 30 s calibration run, --server-poll-us "
              "always --server-pin: chain 1 and paamd's request stages (all chains, us)"]
    for run in ("c1s", "c1b"):
        s = json.loads((HERE / run / "summary.json").read_text())
        text = (HERE / run / "summary.txt").read_text().splitlines()
        row = next(t for t in text if t.startswith("chain1 "))
        st = next(t for t in text if t.startswith("PAAM request stages"))
        host = next(t for t in text if t.startswith("  PAAM: ") and "vCPUs used" in t)
        lines += [f"  {run} ({mode(run)}), epsilon {s['epsilon_ms']:.3f} ms: {row.strip()}",
                  f"    {st.strip()}", f"    host: {host.strip()}"]
    (HERE / "compare.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 7.5), gridspec_kw={"height_ratios": [3, 2]})
    t_base = min(r["t0"] for r in per_run.values())
    x = (ends - t_base) / 60
    idx = {c: i for i, c in enumerate(cpus)}
    a1.plot(x, steal.sum(axis=1), lw=0.5, color="0.5", label="stolen from all vCPUs")
    a1.plot(x, steal[:, [idx[c] for c in EXECUTOR_CPUS]].sum(axis=1), lw=0.6, color="C3",
            label="from the executors' vCPUs (2-5)")
    a1.plot(x, busy.sum(axis=1) / 10, lw=0.6, color="C0", label="CPUs busy x100")
    for run, (t0, t1) in wins.items():
        color = "C2" if mode(run) == "block" else "C1"
        a1.axvspan((t0 - t_base) / 60, (t1 - t_base) / 60, color=color, alpha=0.12)
        a1.text(((t0 + t1) / 2 - t_base) / 60, 560, run, ha="center", fontsize=8)
    a1.set_ylim(0, 600)
    a1.set_xlabel("minutes from the first run's start (orange: spin, green: block)")
    a1.set_ylabel("ms per s")
    a1.set_title("Machine R, 2026-11-24: the host's steal and the guest's busy CPUs, run by run")
    a1.legend(loc="upper right", fontsize=8)
    data = []
    for run in CS2:
        with lzma.open(HERE / run / "hot_path.csv.xz", "rt") as f:
            data.append([float(r["latency_ms"]) for r in csv.DictReader(f)])
    a2.boxplot(data, whis=(0, 100), widths=0.5)
    a2.set_xticks(range(1, len(CS2) + 1),
                  [f"{r} ({mode(r)})\nsteal ex {per_run[r]['steal_ex']:.0f}" for r in CS2])
    a2.set_ylabel("hot-path latency (ms)")
    a2.set_title("Case study 2, 4ST, PAAM: hot path per run (whiskers: min and max)")
    fig.tight_layout()
    fig.savefig(HERE / "fig_cuda_wait.png", dpi=110)


if __name__ == "__main__":
    main()
