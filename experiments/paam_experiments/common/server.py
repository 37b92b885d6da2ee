"""paamd as the case studies start it: its options turned into its command line (with the
checks that drop an option the machine has no cores for), what it said at start, how the OS
schedules its threads, and the labels a summary gives them.

The functions take a :class:`ServerOptions`, or any object with its attributes (an argparse
namespace of :func:`paam_experiments.common.args.add_server_arguments` and ``--backend``).
Where an option cannot be applied they clear it on that object, so that a summary written
from it says what ran.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Sequence

#: paamd's CUDA wait when none is given (core's ResolveCudaWait)
PAAMD_CUDA_WAIT = "nap"
#: a direct client's CUDA wait when none is given (core's ResolveCudaWait says why)
DIRECT_CUDA_WAIT = "spin"


@dataclasses.dataclass
class ServerOptions:
    """paamd's knobs of a case study, named as their command-line dests."""

    backend: str = "cpu"
    server_poll_us: str | None = None
    server_pin: bool = False
    server_cores: int | None = None
    server_spin_buckets: int | None = None
    server_cuda_wait: str | None = None
    dispatcher_priority: int | None = None
    server_queue: str | None = None

    @classmethod
    def from_args(cls, ns: Any) -> "ServerOptions":
        """The options of a parsed command line (attributes missing there keep the
        defaults)."""
        return cls(**{f.name: getattr(ns, f.name, f.default)
                      for f in dataclasses.fields(cls)})


def paamd_workers(backend: str, buckets: int) -> int:
    """The worker threads paamd starts per device unit: one per bucket, and with several buckets
    one per lane of the lowest (paamd's --be-lanes default: 4 on cuda, 1 on cpu)."""
    return buckets + (3 if backend == "cuda" and buckets > 1 else 0)


def server_cores(opts: ServerOptions, server_cpus: Sequence[int]) -> list[int]:
    """The cores paamd's threads may use: the first ``server_cores`` of ``server_cpus`` (all
    of them when unset or when fewer are left, with a note, and the option then cleared)."""
    n = getattr(opts, "server_cores", None)
    if n is None:
        return list(server_cpus)
    if n > len(server_cpus):
        print(f"  --server-cores {n}: only {len(server_cpus)} core(s) left to paamd; it gets "
              "all of them", flush=True)
        opts.server_cores = None
        return list(server_cpus)
    return list(server_cpus[:n])


def awake_cpus(cpus: Sequence[int], server_cpus: Sequence[int], opts: ServerOptions) -> list[int]:
    """The cores ``--keep-awake`` busies: all of ``cpus`` but paamd's when paamd polls (a
    polling thread keeps its core awake already, and beside a thread that never sleeps the fair
    scheduler still hands the busy loop slices of milliseconds)."""
    polls = getattr(opts, "server_poll_us", None) not in (None, "0")
    return [c for c in cpus if not (polls and c in server_cpus)]


def dispatcher_args(opts: ServerOptions, top_executor_priority: int) -> list[str]:
    """paamd's --dispatcher-priority: the option (checked 1..99), by default one above
    ``top_executor_priority`` (at most 99), written back to ``opts``. paamd --rt's own default,
    one above its top bucket, can sit below the executors; where they share its core a
    critical request then waits until no executor above the dispatcher has CPU work."""
    prio = getattr(opts, "dispatcher_priority", None)
    if prio is None:
        prio = min(99, top_executor_priority + 1)
    if not 1 <= prio <= 99:
        raise SystemExit(f"--dispatcher-priority {prio}: a SCHED_FIFO priority is 1..99")
    opts.dispatcher_priority = prio  # the summary's params say what paamd got
    return ["--dispatcher-priority", str(prio)]


def server_poll_args(opts: ServerOptions, server_cpus: Sequence[int], threads: int,
                     pin_cpus: Sequence[int] | None = None) -> list[str]:
    """paamd arguments for ``server_poll_us`` and ``server_pin``: none when unset, and none
    (with a note, and the option cleared) when fewer cores are left to paamd than it has
    polling threads (``threads``): polling threads on the executors' cores would take them from
    the executors, and under --rt's SCHED_FIFO starve them; pinned ones would share cores
    (paamd's --thread-cpus wraps round). ``pin_cpus``: the cores this paamd's threads are
    pinned to (default: all of ``server_cpus``), for paamds that share them."""
    extra = []
    poll = getattr(opts, "server_poll_us", None)
    if poll is not None and poll != "0" and len(server_cpus) < threads:
        print(f"  --server-poll-us {poll} ignored: {len(server_cpus)} core(s) left to paamd for "
              f"{threads} polling threads; paamd keeps its default", flush=True)
        opts.server_poll_us = None
    elif poll is not None:
        extra += ["--poll-us", poll]
    if getattr(opts, "server_pin", False) and len(server_cpus) < threads:
        print(f"  --server-pin ignored: {len(server_cpus)} core(s) left to paamd for {threads} "
              "threads; paamd's threads are not pinned", flush=True)
        opts.server_pin = False
    elif getattr(opts, "server_pin", False):
        cpus = server_cpus if pin_cpus is None else pin_cpus
        extra += ["--thread-cpus", ",".join(map(str, cpus))]
    return extra


def spin_bucket_args(opts: ServerOptions, buckets: int, server_cpus: Sequence[int]) -> list[str]:
    """paamd's --spin-buckets for ``server_spin_buckets`` (at most ``buckets``, the paamd's
    own): none when unset, and none (with a note, the option cleared) when paamd has fewer
    cores of its own than the threads that would never sleep."""
    n = getattr(opts, "server_spin_buckets", None)
    if not n:
        return []
    if len(server_cpus) < n + 1:
        print(f"  --server-spin-buckets {n} ignored: {len(server_cpus)} core(s) left to paamd "
              f"for {n + 1} threads that never sleep", flush=True)
        opts.server_spin_buckets = None
        return []
    return ["--spin-buckets", str(min(n, buckets))]


def cuda_wait_args(opts: ServerOptions) -> list[str]:
    """paamd's --cuda-wait for ``server_cuda_wait`` on the cuda backend (none when unset)."""
    wait = getattr(opts, "server_cuda_wait", None)
    return ["--cuda-wait", wait] if wait and getattr(opts, "backend", "cpu") == "cuda" else []


def queue_args(opts: ServerOptions) -> list[str]:
    """paamd's --queue for ``server_queue`` (none when unset: paamd's fifo)."""
    queue = getattr(opts, "server_queue", None)
    return ["--queue", queue] if queue else []


def server_poll_label(opts: ServerOptions) -> str:
    """The summary's words for paamd's poll window and spinning buckets."""
    poll = getattr(opts, "server_poll_us", None)
    label = "paamd's default" if poll is None else poll if poll == "always" else f"{poll} us"
    spin = getattr(opts, "server_spin_buckets", None)
    return label + (f", spin buckets {spin}" if spin else "")


def server_pin_label(opts: ServerOptions) -> str:
    """The summary's words for paamd's threads: pinned or not, on how many cores, and (cuda)
    how its workers wait."""
    label = "one per core" if getattr(opts, "server_pin", False) else "not pinned"
    n = getattr(opts, "server_cores", None)
    if n is not None:
        label += f", on {n} core{'s' if n > 1 else ''}"
    if cuda_wait_args(opts):
        label += f", CUDA wait {opts.server_cuda_wait}"
    elif getattr(opts, "backend", "cpu") == "cuda":
        wait = os.environ.get("PAAM_CUDA_WAIT") or PAAMD_CUDA_WAIT
        label += f", CUDA wait {wait} (paamd's default)"
    return label


def direct_wait_label(opts: ServerOptions, methods) -> str:
    """How the direct methods' clients (ROS 2, PiCAS) wait for their kernels on the cuda
    backend: $PAAM_CUDA_WAIT, else spinning as a plain CUDA program. "" on the cpu backend or
    when ``methods`` has no direct method."""
    if getattr(opts, "backend", "cpu") != "cuda" or all(m == "PAAM" for m in methods):
        return ""
    env = os.environ.get("PAAM_CUDA_WAIT")
    return (f"direct clients' CUDA wait: {env} ($PAAM_CUDA_WAIT)" if env else
            f"direct clients' CUDA wait: {DIRECT_CUDA_WAIT} (CUDA's default for one context)")


def paamd_startup(srv) -> list[str]:
    """What a running paamd said at start (its notes and the "serving on" line: poll window,
    pinned threads, real-time settings denied), for the summary of the run it served. Read it
    after the run: paamd accepts clients before it prints the line."""
    lines = []
    for line in srv.log().splitlines():
        lines.append(line)
        if "serving on" in line:
            break
    return lines


def paamd_worker_sched(pid: int) -> dict[str, str]:
    """How the OS schedules each of paamd's device workers (threads named
    ``paamd-w<unit>.<bucket>.<lane>``), by name: "SCHED_FIFO 84" or "nice 19" (SCHED_OTHER)
    or the policy's name. Empty when paamd's threads cannot be read."""
    names = {os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR", os.SCHED_OTHER: "nice",
             os.SCHED_BATCH: "SCHED_BATCH", os.SCHED_IDLE: "SCHED_IDLE"}
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            if not name.startswith("paamd-w"):
                continue
            policy = os.sched_getscheduler(int(tid))
            if policy in (os.SCHED_FIFO, os.SCHED_RR):
                value = os.sched_getparam(int(tid)).sched_priority
            else:
                value = os.getpriority(os.PRIO_PROCESS, int(tid))
            out[name] = f"{names.get(policy, policy)} {value}"
        except (OSError, ValueError):
            continue  # the thread ended meanwhile
    # by (unit, bucket, lane) as numbers: w0.10.0 after w0.9.0
    return dict(sorted(out.items(), key=lambda item: [
        int(x) if x.isdigit() else -1 for x in item[0][len("paamd-w"):].split(".")]))


def raise_server_threads(pid: int, dev: int) -> str:
    """nice -20 for paamd's threads that are not device workers (the dispatcher, the control
    thread): what ``paamd --rt`` does for its dispatcher where SCHED_FIFO is denied, applied by
    hand where paamd runs without ``--rt`` to play a machine that denies SCHED_FIFO. ``dev``:
    the device core (a worker is pinned there). Returns the summary's line."""
    notes = []
    for tid in sorted(int(t) for t in os.listdir(f"/proc/{pid}/task")):
        if tid == pid:
            continue
        try:
            if os.sched_getscheduler(tid) != os.SCHED_OTHER or os.sched_getaffinity(tid) == {dev}:
                continue  # a worker
            os.setpriority(os.PRIO_PROCESS, tid, -20)
            notes.append(f"{tid}: nice -20")
        except OSError as err:
            notes.append(f"{tid}: unchanged ({err})")
    return "paamd dispatcher/control threads: " + (", ".join(notes) or "none found")
