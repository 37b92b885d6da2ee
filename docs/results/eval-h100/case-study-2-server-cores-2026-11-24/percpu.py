"""Where the guest was busy and where the host stole, per vCPU, in each case-study-2 run of this
folder (machine Q: PAAM with paamd on all spare cores, a1 and a2, or on 3 of them, b1 and b2)
and of ../case-study-2-10min-2026-11-24 (machines O and P: the three methods). Reads the
/proc/stat samples (one a second) and each run's start and end from the logs' progress file;
leaves out each run's first 8 s (startup, warm-up) and last 3 s. Writes percpu.txt.

    PYTHONPATH=python python docs/results/eval-h100/case-study-2-server-cores-2026-11-24/percpu.py
"""
import gzip
import tarfile
from pathlib import Path

from paam.eval import common

HERE = Path(__file__).resolve().parent
TEN = HERE.parent / "case-study-2-10min-2026-11-24"
# (folder, progress log pack, /proc/stat file, machine)
SOURCES = ((TEN, "logs-O-pc.tgz", "proc-stat-O-pc.txt.gz", "O"),
           (TEN, "logs-O-r.tgz", "proc-stat-O-r.txt.gz", "O"),
           (TEN, "logs-P.tgz", "proc-stat-P.txt.gz", "P"),
           (HERE, "logs-Q.tgz", "proc-stat-Q.txt.gz", "Q"))
EXECUTOR_CPUS = (2, 3, 4, 5)


def samples(path: Path) -> list[tuple[int, str]]:
    """(epoch s, that sample's /proc/stat text) for each sample of the file."""
    out = []
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith("t "):
                out.append((int(line.split()[1]), ""))
            elif out:
                out[-1] = (out[-1][0], out[-1][1] + line)
    return out


def windows(pack: Path) -> list[tuple[str, int, int, str]]:
    """(label, start, end, arguments) of each run, from the progress file."""
    with tarfile.open(pack) as t:
        member = next(m for m in t.getmembers() if m.name.lstrip("./") == "progress")
        lines = t.extractfile(member).read().decode().splitlines()
    starts, runs = {}, []
    for line in lines:
        p = line.split()
        if len(p) >= 3 and p[1] == "start":
            starts[p[0]] = (int(p[2]), " ".join(p[4:]))
        elif len(p) >= 3 and p[1] == "end":
            t0, argv = starts[p[0]]
            runs.append((p[0], t0, int(p[2]), argv))
    return runs


def per_cpu(recs: list[tuple[int, str]], t0: int, t1: int) -> tuple[list[float], list[float]]:
    """Busy and stolen ms per s of each CPU between t0 + 8 and t1 - 3 (common.parse_proc_stat's
    busy: user + nice + system + irq + softirq)."""
    a = [(t, common.parse_proc_stat(text)) for t, text in recs if t0 + 8 <= t <= t1 - 3]
    _ends, _cpus, busy, steal = common.proc_stat_deltas(
        [t for t, _s in a], [s for _t, s in a], 10.0)  # USER_HZ 100 on these machines
    dt = a[-1][0] - a[0][0]
    return list(busy.sum(axis=0) / dt), list(steal.sum(axis=0) / dt)


def main() -> None:
    intro = ("Per vCPU, ms per s (a run's first 8 s and last 3 s left out): busy = user + nice + "
             "system + irq + softirq; steal = what the host took. Executors on CPUs 2-5, the TPU "
             "stand-in on 15, paamd on the others (all of 0, 1, 6-14; with --server-cores 3 on "
             "0, 1, 6). 'idle vCPUs' = CPUs 7-14, which only paamd uses.")
    head = "run    machine  method/paamd             " + " ".join(f"{c:>4}" for c in range(16))
    pad = " " * 41
    blocks = []
    for folder, pack, stat, machine in SOURCES:
        recs = samples(folder / stat)
        for label, t0, t1, argv in windows(folder / pack):
            method = argv.split("--methods ")[1].split()[0]
            if "--server-cores" in argv:
                method += ", paamd on 3 cores"
            busy, steal = per_cpu(recs, t0, t1)
            ex = sum(steal[c] for c in EXECUTOR_CPUS)
            idle = sum(steal[7:15])
            blocks.append("\n".join((
                f"{label:<6} {machine:<8} {method:<24} busy  "
                + " ".join(f"{v:4.0f}" for v in busy),
                f"{pad}steal " + " ".join(f"{v:4.0f}" for v in steal),
                f"{pad}steal: all CPUs {sum(steal):.0f}, executors' {ex:.0f}, idle vCPUs' "
                f"{idle:.0f}; busy: all {sum(busy):.0f}, paamd's cores "
                f"{sum(busy[c] for c in (0, 1, *range(6, 15))):.0f}")))
    text = intro + "\n\n" + head + "\n" + "\n\n".join(blocks) + "\n"
    (HERE / "percpu.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
