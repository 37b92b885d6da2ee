"""Where the guest was busy and where the host stole, per vCPU, in each case-study-2 run of this
folder (machine Q: PAAM with paamd on all spare cores, a1 and a2, or on 3 of them, b1 and b2)
and of ../case-study-2-10min-2026-11-24 (machines O and P: the three methods). Reads the
/proc/stat samples (one a second) and each run's start and end from the logs' progress file;
leaves out each run's first 8 s (startup, warm-up) and last 3 s. Writes percpu.txt.

    python docs/results/eval-h100/case-study-2-server-cores-2026-11-24/percpu.py
"""
import gzip
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEN = HERE.parent / "case-study-2-10min-2026-11-24"
# (folder, progress log pack, /proc/stat file, machine)
SOURCES = ((TEN, "logs-O-pc.tgz", "proc-stat-O-pc.txt.gz", "O"),
           (TEN, "logs-O-r.tgz", "proc-stat-O-r.txt.gz", "O"),
           (TEN, "logs-P.tgz", "proc-stat-P.txt.gz", "P"),
           (HERE, "logs-Q.tgz", "proc-stat-Q.txt.gz", "Q"))
EXECUTOR_CPUS = (2, 3, 4, 5)


def samples(path: Path) -> list[dict]:
    out, cur = [], None
    with gzip.open(path, "rt") as f:
        for line in f:
            p = line.split()
            if p[0] == "t":
                cur = {"t": int(p[1])}
                out.append(cur)
            elif p[0].startswith("cpu") and p[0] != "cpu":
                cur[int(p[0][3:])] = [int(x) for x in p[1:]]
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


def per_cpu(recs: list[dict], t0: int, t1: int) -> tuple[list[float], list[float]]:
    """Busy and stolen ms per s of each CPU between t0 + 8 and t1 - 3."""
    a = [r for r in recs if t0 + 8 <= r["t"] <= t1 - 3]
    first, last = a[0], a[-1]
    dt = last["t"] - first["t"]
    busy, steal = [], []
    for cpu in sorted(k for k in first if k != "t"):
        d = [y - x for x, y in zip(first[cpu], last[cpu])]  # user nice system idle iowait ...
        busy.append((d[0] + d[1] + d[2] + d[5] + d[6]) * 10.0 / dt)  # jiffies of 10 ms
        steal.append(d[7] * 10.0 / dt)
    return busy, steal


def main() -> None:
    out = ["Per vCPU, ms per s (a run's first 8 s and last 3 s left out): busy = user + nice + "
           "system + irq + softirq; steal = what the host took. Executors on CPUs 2-5, the TPU "
           "stand-in on 15, paamd on the others (all of 0, 1, 6-14; with --server-cores 3 on "
           "0, 1, 6). 'idle vCPUs' = CPUs 7-14, which only paamd uses.", ""]
    head = "run    machine  method/paamd             " + " ".join(f"{c:>4}" for c in range(16))
    for folder, pack, stat, machine in SOURCES:
        recs = samples(folder / stat)
        for label, t0, t1, argv in windows(folder / pack):
            method = argv.split("--methods ")[1].split()[0]
            if "--server-cores" in argv:
                method += ", paamd on 3 cores"
            busy, steal = per_cpu(recs, t0, t1)
            ex = sum(steal[c] for c in EXECUTOR_CPUS)
            idle = sum(steal[7:15])
            out += [head if not out[-1].startswith("-") else "",
                    f"{label:<6} {machine:<8} {method:<24} busy  "
                    + " ".join(f"{v:4.0f}" for v in busy),
                    f"{'':<6} {'':<8} {'':<24} steal "
                    + " ".join(f"{v:4.0f}" for v in steal),
                    f"{'':<6} {'':<8} {'':<24} steal: all CPUs {sum(steal):.0f}, executors' "
                    f"{ex:.0f}, idle vCPUs' {idle:.0f}; busy: all {sum(busy):.0f}, "
                    f"paamd's cores {sum(busy[c] for c in (0, 1, *range(6, 15))):.0f}",
                    "-"]
    text = "\n".join(line for line in out if line != "-") + "\n"
    (HERE / "percpu.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
