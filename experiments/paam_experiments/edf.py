"""``paam eval edf``: fixed priority against EDF inside one bucket (paamd ``--queue fifo`` and
``--queue edf``), and the CPU fallback of multi-version kernels (``--fallback``).

Two constructed chain sets, each in one bucket of a paamd of its own per mode. Every chain is
one client that submits a ``spin`` request (its segment) at each release of its period, with
the release as the request's release time (``paam.Client.release_ns``) and the chain's deadline
as its relative deadline (``deadline_ms``); a job's response time runs from its scheduled
release to the client's wake-up, and it misses when that exceeds its deadline.

``edf`` (times in ms at ``--scale 1``; hyperperiod 300):

====  ========  ======  ========  =======  ======================================
chain priority  period  deadline  segment  release offset
====  ========  ======  ========  =======  ======================================
Y     1         300     none      20       0   (holds the device while A, B queue)
X     2         300     none      60       100 (holds it again, longer)
A     10 / 5    100     80        10       2
B     5 / 10    150     35        15       5
====  ========  ======  ========  =======  ======================================

A and B queue together twice per hyperperiod: behind Y, where B's deadline is the earlier (40
against 82), and behind X, where A's is (182 against 190). Fixed priority serves them in one
order both times: with A above B, B misses behind Y (at least 20 + 10 + 15 - 5 = 45 > 35 ms);
with B above A, A misses behind X (at least 160 + 15 + 10 - 102 = 83 > 80 ms); equal
priorities serve A first (FIFO), as A above B. EDF takes each pair in deadline order and meets
every deadline (B 30 ms, A 43 and 68 ms on an idle machine). So no fixed priority schedules
the set and EDF does: modes ``fifo A>B``, ``fifo B>A`` and ``edf``.

``fallback`` (hyperperiod 100): L (priority 5, period 100, no deadline, segment 60, offset 0)
holds the device; U (priority 10, period 100, deadline 20, segment 5, offset 10) arrives behind
it and misses on the device every time (at least 60 + 5 - 10 = 55 ms). Modes ``fallback off``
and ``fallback on`` (paamd ``--fallback cpu-on-overload``): U's CPU version then runs on the
fallback worker once the bucket's recent device time shows that the device would miss; its
first job has no device time yet and still misses. On ``--backend cuda`` this is the GPU
demonstration: U meets its deadline under GPU overload only thanks to the fallback.

Writes ``jobs.csv`` (every job), ``summary.csv``, ``summary.json``, ``summary.txt`` and
``responses.png`` (each job's response time per chain and mode, with the deadlines).
"""
from __future__ import annotations

import argparse
import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

from paam_experiments.common.machine import machine_line, machine_meta
from paam_experiments.common.report import fmt, out_dir, table, write_csv, write_json

MS = 1_000_000


@dataclasses.dataclass(frozen=True)
class ChainSpec:
    name: str
    priority: int
    period_ms: float
    deadline_ms: float  # 0: none
    segment_ms: float
    offset_ms: float


@dataclasses.dataclass(frozen=True)
class Mode:
    label: str
    queue: str
    fallback: str
    priorities: dict[str, int]  # overrides of the set's chain priorities


SETS: dict[str, tuple[float, list[ChainSpec], list[Mode]]] = {
    # name: (hyperperiod in ms, chains, modes)
    "edf": (300.0, [
        ChainSpec("Y", 1, 300, 0, 20, 0),
        ChainSpec("X", 2, 300, 0, 60, 100),
        ChainSpec("A", 10, 100, 80, 10, 2),
        ChainSpec("B", 5, 150, 35, 15, 5),
    ], [
        Mode("fifo A>B", "fifo", "off", {}),
        Mode("fifo B>A", "fifo", "off", {"A": 5, "B": 10}),
        Mode("edf", "edf", "off", {}),
    ]),
    "fallback": (100.0, [
        ChainSpec("L", 5, 100, 0, 60, 0),
        ChainSpec("U", 10, 100, 20, 5, 10),
    ], [
        Mode("fallback off", "fifo", "off", {}),
        Mode("fallback on", "fifo", "cpu-on-overload", {}),
    ]),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sets", default="edf,fallback", help="subset of " + ", ".join(SETS))
    p.add_argument("--hyperperiods", type=int, default=20,
                   help="hyperperiods per mode (default 20: 12 s per mode of the edf set at "
                        "--scale 2)")
    p.add_argument("--scale", type=float, default=2.0,
                   help="factor on every time of the sets (default 2: margins of several ms "
                        "for a busy machine)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--device-cpu", type=int, default=None,
                   help="cpu backend: paamd's device core (default: paamd's, the last core)")
    p.add_argument("--quick", action="store_true", help="CI smoke scale: 3 hyperperiods per mode")
    p.add_argument("--out", default="results/eval/edf")


@dataclasses.dataclass
class Job:
    """One job of one chain in one mode; times in ns (CLOCK_MONOTONIC), response in ms."""

    set: str
    mode: str
    chain: str
    job: int
    release_ns: int
    deadline_ms: float
    submitted: int = 0
    dequeued: int = 0
    device_start: int = 0
    device_end: int = 0
    woken: int = 0
    response_ms: float = 0.0
    missed: bool = False
    ran_on: str = ""
    fallback: bool = False
    error: str = ""


def _chain_thread(client, spec: ChainSpec, scale: float, t0: int, until: int, set_name: str,
                  mode: str, out: list[Job], errors: list[str]) -> None:
    period, offset = int(spec.period_ms * scale * MS), int(spec.offset_ms * scale * MS)
    deadline = spec.deadline_ms * scale
    k = 0
    try:
        while t0 + offset + k * period < until:
            release = t0 + offset + k * period
            wait = (release - time.monotonic_ns()) / 1e9
            if wait > 0:
                time.sleep(wait)
            client.release_ns = release
            job = Job(set_name, mode, spec.name, k, release, deadline)
            try:
                client.request("spin", duration_ms=spec.segment_ms * scale)
            except Exception as exc:  # noqa: BLE001 - recorded with the job
                job.error = f"{type(exc).__name__}: {exc}"
            t = client.timestamps("spin")
            job.submitted, job.dequeued = t["submitted"], t["dequeued"]
            job.device_start, job.device_end, job.woken = t["device_start"], t["device_end"], t["woken"]
            job.response_ms = (job.woken - release) / MS
            job.missed = bool(deadline) and job.response_ms > deadline
            job.ran_on, job.fallback = client.ran_on("spin") or "", client.fallback("spin")
            out.append(job)
            k += 1
    except Exception as exc:  # noqa: BLE001 - reported by the caller
        errors.append(f"{spec.name}: {type(exc).__name__}: {exc}")


def run_mode(set_name: str, mode: Mode, backend: str, scale: float, hyperperiods: int,
             device_cpu: int | None = None) -> list[Job]:
    """One mode of one set against a paamd of its own: every job of every chain."""
    import paam
    from paam.testing import start_server

    hyper, chains, _ = SETS[set_name]
    extra = ["--queue", mode.queue, "--fallback", mode.fallback]
    # one GPU: with several, paamd would spread the chains over them and nothing would queue
    gpus = [0] if backend == "cuda" else None
    with start_server(buckets=1, backend=backend, device_cpu=device_cpu, extra_args=extra,
                      cuda_devices=gpus) as srv:
        clients = [paam.Client(priority=mode.priorities.get(c.name, c.priority), kernels=["spin"],
                               socket=srv.socket_path, deadline_ms=c.deadline_ms * scale,
                               name=f"edf-{c.name}")
                   for c in chains]
        try:
            t0 = time.monotonic_ns() + 200 * MS
            until = t0 + int(hyperperiods * hyper * scale * MS)
            jobs: list[Job] = []
            errors: list[str] = []
            threads = [threading.Thread(target=_chain_thread, name=f"chain-{c.name}",
                                        args=(cl, c, scale, t0, until, set_name, mode.label, jobs, errors))
                       for c, cl in zip(chains, clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise RuntimeError(f"{set_name} / {mode.label}: " + "; ".join(errors))
        finally:
            for c in clients:
                c.close()
    return sorted(jobs, key=lambda j: (j.chain, j.job))


def queued_pairs(jobs: list[Job], blockers=("Y", "X", "L")) -> list[tuple[str, list[str]]]:
    """For each blocker job, the jobs with a deadline that reached paamd while it ran on the
    device (they queued together behind it), in the order they started: (blocker job, names
    like "B0", "A0"). Only pairs and more, the places where the queue's order matters."""
    out = []
    for b in (j for j in jobs if j.chain in blockers and not j.error):
        behind = [j for j in jobs if j.chain not in blockers and not j.error
                  and b.device_start < j.dequeued < b.device_end]
        if len(behind) >= 2:
            behind.sort(key=lambda j: j.device_start)
            out.append((f"{b.chain}{b.job}", [f"{j.chain}{j.job}" for j in behind]))
    return out


def summarize_jobs(jobs: list[Job]) -> list[dict[str, Any]]:
    """Per (set, mode, chain): jobs, misses, the largest response, fallbacks, errors."""
    rows = []
    keys = dict.fromkeys((j.set, j.mode, j.chain) for j in jobs)
    for s, m, c in keys:
        js = [j for j in jobs if (j.set, j.mode, j.chain) == (s, m, c)]
        rows.append({"set": s, "mode": m, "chain": c, "deadline_ms": js[0].deadline_ms,
                     "jobs": len(js), "missed": sum(j.missed for j in js),
                     "max_response_ms": max(j.response_ms for j in js),
                     "fallbacks": sum(j.fallback for j in js), "errors": sum(bool(j.error) for j in js)})
    return rows


def render(rows: list[dict[str, Any]], meta: dict[str, Any], scale: float) -> str:
    lines = [f"EDF inside a bucket and the CPU fallback, times x{scale:g}", machine_line(meta), ""]
    head = ["set", "mode", "chain", "deadline", "jobs", "missed", "max response", "fallbacks"]
    body = [[r["set"], r["mode"], r["chain"], fmt(r["deadline_ms"]) if r["deadline_ms"] else "none",
             str(r["jobs"]), str(r["missed"]), fmt(r["max_response_ms"]), str(r["fallbacks"])]
            for r in rows]
    lines.append(table([head] + body, right=range(3, 8)))
    lines.append("times in ms; response = wake-up of the client - the job's scheduled release")
    return "\n".join(lines)


def plot(jobs: list[Job], path: Path) -> None:
    from paam.figures import pyplot, save
    plt = pyplot()
    panels = list(dict.fromkeys((j.set, j.mode) for j in jobs))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2), sharey=False, squeeze=False)
    for ax, (s, m) in zip(axes[0], panels):
        for chain in dict.fromkeys(j.chain for j in jobs if j.set == s and j.deadline_ms):
            js = [j for j in jobs if (j.set, j.mode, j.chain) == (s, m, chain)]
            line = ax.plot([j.job for j in js], [j.response_ms for j in js], "o", ms=3, label=chain)[0]
            ax.axhline(js[0].deadline_ms, color=line.get_color(), ls="--", lw=0.8)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{s}: {m}", fontsize=9)
        ax.set_xlabel("job")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("response time (ms); dashed: deadline")
    save(fig, path)


def run(args: argparse.Namespace) -> int:
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in sets if s not in SETS]
    if unknown or not sets:
        raise SystemExit(f"--sets: unknown {', '.join(unknown) or '(none given)'}; valid: {', '.join(SETS)}")
    if args.scale <= 0 or args.hyperperiods < 1:
        raise SystemExit("--scale must be positive and --hyperperiods at least 1")
    hyperperiods = min(args.hyperperiods, 3) if args.quick else args.hyperperiods
    out = out_dir(args.out)
    meta = machine_meta(args.backend)
    jobs: list[Job] = []
    for s in sets:
        for mode in SETS[s][2]:
            seconds = hyperperiods * SETS[s][0] * args.scale / 1e3
            print(f"{s}: {mode.label} ({seconds:.1f} s) ...", flush=True)
            jobs += run_mode(s, mode, args.backend, args.scale, hyperperiods, args.device_cpu)
    rows = summarize_jobs(jobs)
    write_csv(out / "jobs.csv", [dataclasses.asdict(j) for j in jobs])
    write_csv(out / "summary.csv", rows)
    pairs = {f"{s} / {m}": queued_pairs([j for j in jobs if (j.set, j.mode) == (s, m)])
             for s, m in dict.fromkeys((j.set, j.mode) for j in jobs)}
    write_json(out / "summary.json", {"meta": meta, "scale": args.scale, "hyperperiods": hyperperiods,
                                      "summary": rows, "queued_together": pairs})
    text = render(rows, meta, args.scale)
    (out / "summary.txt").write_text(text + "\n")
    plot(jobs, out / "responses.png")
    print(text)
    print(f"wrote {out}")
    return 0
