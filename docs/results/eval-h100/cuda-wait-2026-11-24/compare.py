"""How paamd's CUDA workers wait for their GPU work, compared on three lent H100s (machines R,
S, T), one run after another on each: spin (the default), block (--cuda-wait block) and nap
(--cuda-wait nap). Case study 2: 4ST, PAAM, 2.5 ms segments, 150 s per run. Case study 1: PAAM
only, 100 s after a 30 s calibration run, --server-poll-us always --server-pin. On S, nap did not
spin first (code f5365ac); on T it spins for one nap's length first (code 3133c5d).
Reads each run's summary.json, the hot path's GPU request stages (paam_stages_hot.csv.xz),
/proc/stat (one sample a second) with the runs' start and end from the logs' progress files, and
the backend bench (backend-S.json, backend-T.json). Writes compare.txt and fig_cuda_wait.png.

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
# machine -> (progress log pack, /proc/stat file) of each of its batches
MACHINES = {"R": (("logs-R1.tgz", "proc-stat-R1.txt.gz"), ("logs-R2.tgz", "proc-stat-R2.txt.gz")),
            "S": (("logs-S.tgz", "proc-stat-S.txt.gz"),),
            "T": (("logs-T.tgz", "proc-stat-T.txt.gz"),)}
CS2 = {"R": ("s1", "b1", "s2", "b2", "b3", "s3"), "S": ("n1", "s4", "b4", "n2"), "T": ("n3", "s5")}
CS1 = {"R": ("c1s", "c1b"), "S": ("c1n",), "T": ("c1s2", "c1n2")}
# back to back on one machine: (spin, other)
PAIRS = (("s1", "b1"), ("s2", "b2"), ("s3", "b3"), ("s4", "b4"), ("s4", "n1"), ("s4", "n2"),
         ("s5", "n3"))
EXECUTOR_CPUS = (2, 3, 4, 5)
TPU_CPU = 15
STAGES = ("picked->device_start_us", "device_end->completed_us", "completed->woken_us")


def mode(run: str) -> str:
    key = run[2] if run.startswith("c1") else run[0]
    return {"s": "spin", "b": "block", "n": "nap"}[key]


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


def host_series(machine: str):
    """(seconds ends [n], CPUs, busy ms [n, cpus], steal ms [n, cpus]) over the machine's
    batches, and every run's window."""
    ends, busy, steal, wins, cpus = [], [], [], {}, None
    for pack, stat in MACHINES[machine]:
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
    with lzma.open(HERE / run / "paam_stages_hot.csv.xz", "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["chain_priority"] == "100"]
    return {k: np.array([float(r[k]) for r in rows]) for k in STAGES}


def cs2_row(run, ends, cpus, busy, steal, wins) -> dict:
    s = json.loads((HERE / run / "summary.json").read_text())["results"]["4ST"]["PAAM"]
    t0, t1 = wins[run]
    b, st = per_cpu(ends, busy, steal, t0, t1)
    idx = {c: i for i, c in enumerate(cpus)}
    paamd = [c for c in cpus if c not in EXECUTOR_CPUS and c != TPU_CPU]
    return {"hot": s["hot_path_ms"], "drops": s["drops"]["total"],
            "due": s["hot_path_from_due_ms"]["max"], "steal": st.sum(),
            "steal_ex": sum(st[idx[c]] for c in EXECUTOR_CPUS),
            "steal_pd": sum(st[idx[c]] for c in paamd), "busy": b.sum() / 1000,
            "busy_pd": sum(b[idx[c]] for c in paamd) / 1000,
            "vcpus": len(s["host"]["active_cpus"]),
            "quiet": s["hot_path_by_host_steal"]["quiet"], "t0": t0, "t1": t1}


def main() -> None:
    lines = [__doc__.split("\n\n")[0].replace("\n", " "), ""]
    lines.append("Case study 2, 4ST, PAAM, 2.5 ms segments, 150 s per run, in the order run on "
                 "each machine; latency ms:")
    head = (f"{'run':4} {'wait':5} {'start UTC':9} {'n':>5} {'mean':>5} {'p99':>6} {'max':>6} "
            f"{'drops':>5} {'due max':>7} {'steal':>5} {'ex':>4} {'paamd':>5} {'busy':>5} "
            f"{'pdbusy':>6} {'vCPUs':>5} {'quiet n / max':>13}")
    rows, series = {}, {}
    for machine, runs in CS2.items():
        ends, cpus, busy, steal, wins = host_series(machine)
        series[machine] = (ends, cpus, busy, steal, wins)
        lines += ["", f"machine {machine}", head, "-" * len(head)]
        for run in runs:
            r = rows[run] = cs2_row(run, ends, cpus, busy, steal, wins)
            q = r["quiet"]
            when = datetime.fromtimestamp(r["t0"], timezone.utc).strftime("%H:%M:%S")
            lines.append(
                f"{run:4} {mode(run):5} {when:9} {r['hot']['n']:>5} {r['hot']['mean']:>5.1f} "
                f"{r['hot']['p99']:>6.1f} {r['hot']['max']:>6.1f} {r['drops']:>5} "
                f"{r['due']:>7.1f} {r['steal']:>5.0f} {r['steal_ex']:>4.0f} "
                f"{r['steal_pd']:>5.0f} {r['busy']:>5.2f} {r['busy_pd']:>6.2f} {r['vcpus']:>5} "
                f"{q['n']:>6} / {common.fmt(q.get('max'), 1):>5}")
    lines += ["", "steal: ms/s stolen from all 16 vCPUs, ex: from the executors' (2-5), paamd: "
              "from paamd's (0, 1, 6-14); busy: CPUs the guest kept busy, pdbusy: of them on "
              "paamd's vCPUs; vCPUs: busy at least 50 ms/s; quiet: hot-path instances where the "
              "host stole at most 50 ms/s (n / max ms). A run's first 8 s and last 3 s are left "
              "out of the /proc/stat figures.", ""]
    lines.append("Back-to-back comparisons on one machine, spin -> the other wait")
    for a, b in PAIRS:
        x, y = rows[a], rows[b]
        lines.append(f"  {a} -> {b} ({mode(b)}): mean {x['hot']['mean']:.1f} -> "
                     f"{y['hot']['mean']:.1f}, p99 {x['hot']['p99']:.1f} -> {y['hot']['p99']:.1f}, "
                     f"max {x['hot']['max']:.1f} -> {y['hot']['max']:.1f}, drops {x['drops']} -> "
                     f"{y['drops']}; steal on the executors' vCPUs {x['steal_ex']:.0f} -> "
                     f"{y['steal_ex']:.0f} ms/s; CPUs busy {x['busy']:.2f} -> {y['busy']:.2f}")
    lines += ["", "The hot path's GPU requests (chain priority 100), paamd's stages, us: "
              "p50 / p99 / max"]
    for runs in CS2.values():
        for run in runs:
            st = stages(run)
            lines.append(f"  {run:3} {mode(run):5} " + " | ".join(
                f"{k[:-3]} {np.percentile(v, 50):.0f} / {np.percentile(v, 99):.0f} / "
                f"{v.max():.0f}" for k, v in st.items()))
    lines += ["", "Case study 1, PAAM only, 100 s after a 30 s calibration run, --server-poll-us "
              "always --server-pin: chain 1 (max / p99, bound, bound + rclpy cost, ms), epsilon "
              "from the calibration run, paamd's request stages (all chains, us), the host"]
    for machine, runs in CS1.items():
        for run in runs:
            s = json.loads((HERE / run / "summary.json").read_text())
            text = (HERE / run / "summary.txt").read_text().splitlines()
            row = next(t for t in text if t.startswith("chain1 ")).split()
            st = next(t for t in text if t.startswith("PAAM request stages"))
            host = next(t for t in text if t.startswith("  PAAM: ") and "vCPUs used" in t)
            lines += [f"  {run} ({machine}, {mode(run)}): chain 1 {row[2]} / {row[4]}, bound "
                      f"{row[6]}, + rclpy {row[7]}; epsilon {s['epsilon_ms']:.3f} ms",
                      "    " + st.strip().replace("PAAM request stages in the run (all chains), ",
                                                  ""),
                      "    host: " + host.strip().removeprefix("PAAM: ")]
    lines += ["", "The backend alone (paam_gpu_bench backend --iters 5000: Backend::Run of a "
              "one-block vector_add at level 0, us; '3 lanes spin': the lowest level's lanes run "
              "2 ms spins meanwhile)"]
    for machine in ("S", "T"):
        raw = json.loads((HERE / f"backend-{machine}.json").read_text())
        lines.append(f"  machine {machine}: " + "; ".join(
            f"{m['wait']} {m['load']} {m['round_trip_us']['p50']:.1f} / "
            f"{m['round_trip_us']['p99']:.1f} / {m['round_trip_us']['max']:.1f}"
            for m in raw["modes"]) + "  (p50 / p99 / max)")
    (HERE / "compare.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

    colors = {"spin": "C1", "block": "C2", "nap": "C0"}
    fig, axes = plt.subplots(4, 1, figsize=(11, 13),
                             gridspec_kw={"height_ratios": [2, 2, 2, 3]})
    for ax, (machine, (ends, cpus, busy, steal, wins)) in zip(axes, series.items()):
        t_base = min(t0 for t0, _ in wins.values())
        x = (ends - t_base) / 60
        idx = {c: i for i, c in enumerate(cpus)}
        gap = np.r_[False, np.diff(ends) > 5]  # no line across the pause between two batches

        def cut(y):
            return np.where(gap, np.nan, y)

        ax.plot(x, cut(steal.sum(axis=1)), lw=0.5, color="0.5", label="stolen from all vCPUs")
        ax.plot(x, cut(steal[:, [idx[c] for c in EXECUTOR_CPUS]].sum(axis=1)), lw=0.6,
                color="C3", label="from the executors' vCPUs (2-5)")
        ax.plot(x, cut(busy.sum(axis=1) / 10), lw=0.6, color="k", alpha=0.6,
                label="CPUs busy x100")
        for run, (t0, t1) in wins.items():
            ax.axvspan((t0 - t_base) / 60, (t1 - t_base) / 60, color=colors[mode(run)],
                       alpha=0.13)
            ax.text(((t0 + t1) / 2 - t_base) / 60, 1050, run, ha="center", fontsize=8)
        ax.set_ylim(0, 1150)
        ax.set_ylabel("ms per s")
        ax.set_title(f"machine {machine}: the host's steal and the guest's busy CPUs "
                     "(shaded: spin orange, block green, nap blue)", fontsize=9)
    axes[0].legend(loc="center right", fontsize=7)
    axes[2].set_xlabel("minutes from the machine's first run")
    order = [r for runs in CS2.values() for r in runs]
    data = []
    for run in order:
        with lzma.open(HERE / run / "hot_path.csv.xz", "rt") as f:
            data.append([float(r["latency_ms"]) for r in csv.DictReader(f)])
    box = axes[3].boxplot(data, whis=(0, 100), widths=0.5, patch_artist=True)
    for patch, run in zip(box["boxes"], order):
        patch.set_facecolor(colors[mode(run)])
        patch.set_alpha(0.5)
    axes[3].set_xticks(range(1, len(order) + 1),
                       [f"{r}\n{mode(r)}\nex {rows[r]['steal_ex']:.0f}" for r in order],
                       fontsize=8)
    axes[3].set_ylabel("hot-path latency (ms)")
    axes[3].set_title("Case study 2, 4ST, PAAM, 2.5 ms: hot path per run (whiskers: min, max; "
                      "ex: ms/s stolen from the executors' vCPUs); R | S | T", fontsize=9)
    fig.tight_layout()
    fig.savefig(HERE / "fig_cuda_wait.png", dpi=100)


if __name__ == "__main__":
    main()
