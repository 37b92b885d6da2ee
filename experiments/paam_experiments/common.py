"""What every evaluation experiment shares: output folders, the machine description, summary
statistics, tables, CPU placement, real-time knobs with their fallback, a CPU stressor, and a
sampler of what the host took from the (virtual) CPUs during a run.

Nothing here imports rclpy or matplotlib at import time.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import math
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from paam.argtypes import positive_int  # noqa: F401 - the experiments' names
from paam.figures import pyplot, save  # noqa: F401 - the experiments' names
from paam.ros.rt import apply_rt, dds_threads_rt, lock_memory, nice_for  # noqa: F401 - the eval's names

# -- output -------------------------------------------------------------------------------------


def out_dir(path: str | os.PathLike) -> Path:
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    return p


def gpu_label(names: Sequence[str]) -> str:
    """One line for the host's GPUs: "NVIDIA H100", "2 x NVIDIA H200", "A, B"."""
    if not names:
        return "unknown"
    if len(set(names)) == 1:
        return names[0] if len(names) == 1 else f"{len(names)} x {names[0]}"
    return ", ".join(names)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_meta(backend: str = "cpu", argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Where and when a run happened: written into every result file."""
    meta = {
        "date": dt.date.today().isoformat(),
        "nproc": os.cpu_count(),
        "cpu": cpu_model(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "backend": backend,
        "command": "paam " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    if backend == "cuda":
        try:
            names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                   capture_output=True, text=True, timeout=10).stdout.split("\n")
            meta["gpu"] = gpu_label([n.strip() for n in names if n.strip()])
        except (OSError, subprocess.SubprocessError):
            meta["gpu"] = "unknown"
    try:
        meta["loadavg_at_start"] = os.getloadavg()[0]
    except OSError:
        pass
    throttle = rt_throttling()
    if throttle is not None:
        meta["sched_rt_runtime_us"], meta["sched_rt_period_us"] = throttle
    return meta


def rt_throttling(proc: Path = Path("/proc/sys/kernel")) -> tuple[int, int] | None:
    """The kernel's RT throttling (sched_rt_runtime_us, sched_rt_period_us); runtime -1 = off.
    None where it cannot be read."""
    try:
        return (int((proc / "sched_rt_runtime_us").read_text()),
                int((proc / "sched_rt_period_us").read_text()))
    except (OSError, ValueError):
        return None


def device_core_line(demand_by_unit: dict[str, list[float]], meta: dict[str, Any],
                     fair_by_unit: dict[str, int] | None = None) -> str:
    """What the CPU backend's device core is asked for, per bucket (``demand_by_unit``:
    paam.analysis.bounds.bucket_demand), and whether its SCHED_FIFO buckets (all but the lowest
    ``fair_by_unit`` ones, paamd's --fair-buckets; default paamd's own, all but the lowest) ask
    for more than the kernel's RT budget."""
    parts = []
    for acc, demand in demand_by_unit.items():
        n = len(demand)
        fair = (fair_by_unit or {}).get(acc, 1 if n > 1 else 0)
        fifo = sum(demand[:n - fair])
        which = ("none" if fair >= n else "all" if fair == 0 else "all but the lowest" if fair == 1
                 else f"0-{n - fair - 1}" if n - fair > 1 else "0")
        text = (f"{acc} on the device core: buckets 0-{n - 1} declare "
                + " / ".join(f"{100 * d:.1f}" for d in demand)
                + f"% of it; the SCHED_FIFO ones ({which}) {100 * fifo:.1f}%")
        runtime, period = meta.get("sched_rt_runtime_us"), meta.get("sched_rt_period_us")
        if runtime is not None and runtime >= 0 and period and fifo > runtime / period:
            text += (f", over the kernel's RT budget ({runtime} of {period} us): while they are "
                     "all busy the kernel throttles them (docs/evaluation-log.md, section 1)")
        parts.append(text)
    return "; ".join(parts)


def machine_line(meta: dict[str, Any]) -> str:
    gpu = f", GPU {meta['gpu']}" if meta.get("gpu") else ""
    rt = ""
    if "sched_rt_runtime_us" in meta:
        runtime = meta["sched_rt_runtime_us"]
        rt = (", RT throttling off" if runtime < 0 else
              f", RT throttling {runtime} of {meta['sched_rt_period_us']} us")
    return (f"{meta['cpu']}, {meta['nproc']} CPUs{gpu}, Linux {meta['kernel']}{rt}, "
            f"{meta['backend']} backend, {meta['date']}")


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(_clean(data), indent=1))


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        return _clean(value.item())
    return value


#: the case studies' three methods, in their order, and their ``--methods`` keys
METHODS = ("ROS 2", "PiCAS", "PAAM")
METHOD_KEYS = {"ros2": "ROS 2", "picas": "PiCAS", "paam": "PAAM"}
#: a method's name back to its key (the case studies' run functions take the key)
KEY_OF_METHOD = {name: key for key, name in METHOD_KEYS.items()}


def parse_methods(text: str) -> list[str]:
    """``--methods`` ("ros2,picas,paam" or a subset) as method names; exits naming the keys."""
    methods = [METHOD_KEYS.get(m.strip()) for m in text.split(",") if m.strip()]
    if None in methods or not methods:
        raise SystemExit(f"--methods: choose from {', '.join(METHOD_KEYS)}")
    return methods


def open_csv(path: Path):
    """``path`` opened for reading as text, or ``path`` + ".xz" when only that exists (raw
    results are committed xz-compressed, docs/results)."""
    if not path.exists() and path.with_name(path.name + ".xz").exists():
        import lzma
        return lzma.open(path.with_name(path.name + ".xz"), "rt", newline="")
    return path.open(newline="")


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Rows of dicts (same keys) as CSV; floats with 3 decimals."""
    if not rows:
        path.write_text("")
        return
    keys = list(rows[0])
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys)
        for r in rows:
            w.writerow([f"{r[k]:.3f}" if isinstance(r[k], float) else r[k] for k in keys])


# -- statistics ---------------------------------------------------------------------------------


def summarize(values: Iterable[float] | np.ndarray) -> dict[str, float]:
    """min / mean / p50 / p99 / p99.9 / max, COSMIC's jitter figures, and the sample count.

    ``avg_jitter`` is the mean absolute deviation from the mean (COSMIC's "average jitter": a
    bimodal distribution raises it); ``p2v`` is the peak-to-valley jitter, max − min.
    """
    a = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.float64)
    if a.size == 0:
        nan = float("nan")
        return {"n": 0, "min": nan, "mean": nan, "p50": nan, "p99": nan, "p999": nan,
                "max": nan, "std": nan, "avg_jitter": nan, "p2v": nan}
    mean = float(a.mean())
    lo, hi = float(a.min()), float(a.max())
    p50, p99, p999 = (float(x) for x in np.percentile(a, [50, 99, 99.9]))
    return {"n": int(a.size), "min": lo, "mean": mean, "p50": p50, "p99": p99, "p999": p999,
            "max": hi, "std": float(a.std()), "avg_jitter": float(np.abs(a - mean).mean()),
            "p2v": hi - lo}


def table(rows: list[list[str]], right: Iterable[int] = ()) -> str:
    """A plain-text table, first row the header."""
    right = set(right)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, row in enumerate(rows):
        out.append("  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                             for i, c in enumerate(row)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def fmt(x: float, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def fmt_p50_p99_max(s: dict, digits: int = 1) -> str:
    """A :func:`summarize` result as "p50 / p99 / max"."""
    return " / ".join(fmt(s[k], digits) for k in ("p50", "p99", "max"))


# -- CPU placement ------------------------------------------------------------------------------


def default_kappa(backend: str) -> float:
    """kappa (ms) for a bound where none is given: the paper's 0.13 on a GPU; 0.02 on the CPU
    backend, whose buckets' workers the OS switches."""
    return 0.13 if backend == "cuda" else 0.02


def device_cpu() -> int:
    """The core that plays the accelerator on the CPU backend: the last one this process may use
    (as `paam demo`; ``taskset`` limits them)."""
    return max(os.sched_getaffinity(0))


def host_cpus(backend: str) -> list[int]:
    """Cores left for client processes: every core this process may use (``taskset`` limits
    them), but the device core on the CPU backend."""
    allowed = sorted(os.sched_getaffinity(0))
    if backend == "cpu" and len(allowed) > 1:
        return [c for c in allowed if c != device_cpu()]
    return allowed


def map_cpu(cpu: int, cpus: Sequence[int]) -> int:
    """A CPU index of a configuration written for a bigger machine, mapped onto ``cpus``:
    unchanged when it exists there, else ``cpus[(cpu - first) mod len(cpus)]``."""
    if cpu in cpus:
        return cpu
    return cpus[(cpu - min(2, cpu)) % len(cpus)]


def cpu_ranges(cpus: Iterable[int]) -> str:
    """Cores as ranges: [0, 1, 6, 7, 8] -> "0-1,6-8"."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive cores
    for c in sorted(set(cpus)):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def thread_cpus(skip_self: bool = True) -> dict[str, int]:
    """How many of this process's threads may run on each set of cores now (their affinity),
    e.g. {"2": 1, "0-1,6-14": 9}; without the calling thread if ``skip_self``."""
    import threading
    me = threading.get_native_id()
    out: dict[str, int] = {}
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return out
    for tid in tids:
        if skip_self and tid == me:
            continue
        try:
            key = cpu_ranges(os.sched_getaffinity(tid))
        except OSError:  # (ended meanwhile)
            continue
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def pin_this_thread(cpus: Iterable[int]) -> bool:
    try:
        os.sched_setaffinity(0, set(cpus))
        return True
    except (OSError, AttributeError):
        return False


def apply_priority(rt_priority: int | None, mode: str = "auto") -> str:
    """Give the calling thread an OS priority and say what it got.

    ``mode``: ``fifo`` (SCHED_FIFO ``rt_priority`` or nothing), ``nice`` (nice value mapped from
    the RT priority: 90 → -20, one step per priority level, at most 0), ``auto`` (fifo when
    permitted, else nice: the fallback for machines that deny SCHED_FIFO), ``none``.
    The implementation is :func:`paam.ros.rt.apply_rt` (no ROS needed); this returns its
    ``priority_summary``.
    """
    return apply_rt(rt_priority, None, mode=mode, log=lambda _line: None).priority_summary


def _poll_us(text: str) -> str:
    if text == "always" or (text.isdigit() and int(text) >= 0):
        return text
    raise argparse.ArgumentTypeError(f"expected microseconds (0 or more) or 'always', got {text!r}")


def add_server_arguments(p: argparse.ArgumentParser) -> None:
    """paamd's options shared by the case studies."""
    p.add_argument("--server-poll-us", type=_poll_us, default=None, metavar="US|always",
                   help="paamd's busy-poll window (its --poll-us) before its dispatcher and "
                        "workers sleep on a futex (default: paamd's own, 50 us; 'always': they "
                        "never sleep). paamd runs on cores no executor uses, so a long window "
                        "costs those cores only; it spares a request the wake-up of a sleeping "
                        "server thread, which is slow on a VM whose idle vCPUs halt")
    p.add_argument("--server-pin", action="store_true",
                   help="pin paamd's dispatcher and workers one per core of paamd's own cores "
                        "(its --thread-cpus; with --server-poll-us always a never-sleeping "
                        "thread then never shares a core); ignored when paamd has fewer cores of "
                        "its own than threads")
    p.add_argument("--server-cores", type=positive_int, default=None, metavar="N",
                   help="confine paamd's threads to the first N of the cores no executor uses "
                        "(default: all of them). An experiment's knob: on a VM the host steals "
                        "only from vCPUs that run, and paamd's threads run on vCPUs the direct "
                        "methods leave idle; on one lent H100, 3 cores took the steal off the "
                        "vCPUs left idle but not off the executors' (docs/evaluation.md, "
                        "section 2)")
    p.add_argument("--server-spin-buckets", type=positive_int, default=None, metavar="N",
                   help="paamd's --spin-buckets: its dispatcher and the workers of its N most "
                        "urgent buckets never sleep, and on the cuda backend those workers spin "
                        "on their GPU work; the other threads keep --server-poll-us and "
                        "--server-cuda-wait. The critical chains' round trip without a "
                        "wake-up, at a busy core per such thread (not one per thread as with "
                        "--server-poll-us always); ignored where paamd has fewer cores of its "
                        "own than N + 1")
    p.add_argument("--server-cuda-wait", type=_cuda_wait, default=None,
                   metavar="spin|poll|block|nap[:US]",
                   help="how paamd's CUDA workers wait for their GPU work (its --cuda-wait; "
                        "default: paamd's own, nap, or $PAAM_CUDA_WAIT): spin on a word the "
                        "stream writes keeps a core busy while a request's kernel runs; block "
                        "sleeps in the driver (each request ends about 0.1 ms later on an H100); "
                        "nap looks at spin's word between sleeps of US us (default 50; about "
                        "35 us later). On a VM the spinning vCPUs are "
                        "ones the host may then steal from (docs/evaluation.md, section 2)")
    p.add_argument("--dispatcher-priority", type=int, default=None, metavar="N",
                   help="SCHED_FIFO priority of paamd's dispatcher (its --dispatcher-priority; "
                        "default: one above the most urgent executor, 91 in the shipped "
                        "systems, so that a critical "
                        "request never waits for an executor's CPU work where they share a core; "
                        "paamd --rt's own default, one above its top bucket, 86 here, put "
                        "epsilon at 9.7 ms on the 2-core VM: docs/evaluation-log.md section 1)")


#: paamd's CUDA wait when none is given (core's ResolveCudaWait; spin until 2026-11-24)
PAAMD_CUDA_WAIT = "nap"
#: a direct client's CUDA wait when none is given (core's ResolveCudaWait says why; napped
#: like paamd's from 640c10a to 8c6529e)
DIRECT_CUDA_WAIT = "spin"


def _cuda_wait(text: str) -> str:
    """paamd's --cuda-wait forms (core's ParseCudaWait): spin, poll, block, nap, nap:US."""
    if text in ("spin", "poll", "block", "nap"):
        return text
    us = text[4:] if text.startswith("nap:") else ""
    if us.isdigit() and 1 <= int(us) <= 10000 and str(int(us)) == us:
        return text
    raise argparse.ArgumentTypeError(
        f"expected spin, poll, block, nap or nap:US (US = 1..10000), got {text!r}")


def server_cores(args: argparse.Namespace, server_cpus: Sequence[int]) -> list[int]:
    """The cores paamd's threads may use: the first ``--server-cores`` of ``server_cpus`` (all
    of them when unset or when fewer are left, with a note, and the option then cleared so that
    the summary says what ran)."""
    n = getattr(args, "server_cores", None)
    if n is None:
        return list(server_cpus)
    if n > len(server_cpus):
        print(f"  --server-cores {n}: only {len(server_cpus)} core(s) left to paamd; it gets "
              "all of them", flush=True)
        args.server_cores = None
        return list(server_cpus)
    return list(server_cpus[:n])


def add_keep_awake_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep-awake", action="store_true",
                   help="one SCHED_IDLE busy loop per core during the runs of every method "
                        "(user space's idle=poll): a woken thread then does not wait for its "
                        "halted virtual CPU to be resumed (on a VM) or for a C-state exit. "
                        "On a VM it costs the worst case where the host is short of CPUs: the "
                        "never-idle guest then loses whole vCPUs for a host slice (100 ms on "
                        "one lent H100 of 2026-11-23, where it raised case study 2's maximum "
                        "from 126-134 to 183 ms; docs/evaluation-log.md section 2); look at "
                        "host_stat.csv before trusting a maximum taken with it")


def awake_cpus(cpus: Sequence[int], server_cpus: Sequence[int],
               args: argparse.Namespace) -> list[int]:
    """The cores ``--keep-awake`` busies: all of ``cpus`` but paamd's when paamd polls (a
    polling thread keeps its core awake already, and beside a thread that never sleeps the fair
    scheduler still hands the busy loop slices of milliseconds: the likely cause of a 3.6 ms
    p99 launch stage in the one case-study-1 run that had them there)."""
    polls = getattr(args, "server_poll_us", None) not in (None, "0")
    return [c for c in cpus if not (polls and c in server_cpus)]


def dispatcher_args(args: argparse.Namespace, top_executor_priority: int) -> list[str]:
    """paamd's --dispatcher-priority: the case studies' option (checked 1..99), by default one
    above ``top_executor_priority`` (at most 99). paamd --rt's own default, one above its top
    bucket, can sit below the executors; where they share its core a critical request then
    waits until no executor above the dispatcher has CPU work (on the 2-core VM: chain 1's
    dispatch p99 7.6 ms, epsilon 9.7 ms; docs/evaluation-log.md section 1)."""
    prio = getattr(args, "dispatcher_priority", None)
    if prio is None:
        prio = min(99, top_executor_priority + 1)
    if not 1 <= prio <= 99:
        raise SystemExit(f"--dispatcher-priority {prio}: a SCHED_FIFO priority is 1..99")
    args.dispatcher_priority = prio  # the summary's params say what paamd got
    return ["--dispatcher-priority", str(prio)]


def paamd_workers(backend: str, buckets: int) -> int:
    """The worker threads paamd starts per device unit: one per bucket, and with several buckets
    one per lane of the lowest (paamd's --be-lanes default: 4 on cuda, 1 on cpu)."""
    return buckets + (3 if backend == "cuda" and buckets > 1 else 0)


def server_poll_args(args: argparse.Namespace, server_cpus: Sequence[int], threads: int,
                     pin_cpus: Sequence[int] | None = None) -> list[str]:
    """paamd arguments for ``--server-poll-us`` and ``--server-pin``: none when unset, and none
    (with a note, and the option cleared so that the summary says so) when fewer cores are left
    to paamd than it has polling threads (``threads``): polling threads on the executors' cores
    would take them from the executors, and under --rt's SCHED_FIFO starve them; pinned ones
    would share cores (paamd's --thread-cpus wraps round). ``pin_cpus``: the cores this paamd's
    threads are pinned to (default: all of ``server_cpus``), for paamds that share them."""
    extra = []
    poll = getattr(args, "server_poll_us", None)
    if poll is not None and poll != "0" and len(server_cpus) < threads:
        print(f"  --server-poll-us {poll} ignored: {len(server_cpus)} core(s) left to paamd for "
              f"{threads} polling threads; paamd keeps its default", flush=True)
        args.server_poll_us = None
    elif poll is not None:
        extra += ["--poll-us", poll]
    if getattr(args, "server_pin", False) and len(server_cpus) < threads:
        print(f"  --server-pin ignored: {len(server_cpus)} core(s) left to paamd for {threads} "
              "threads; paamd's threads are not pinned", flush=True)
        args.server_pin = False
    elif getattr(args, "server_pin", False):
        cpus = server_cpus if pin_cpus is None else pin_cpus
        extra += ["--thread-cpus", ",".join(map(str, cpus))]
    return extra


def spin_bucket_args(args: argparse.Namespace, buckets: int,
                     server_cpus: Sequence[int]) -> list[str]:
    """paamd's --spin-buckets for ``--server-spin-buckets`` (at most ``buckets``, the paamd's
    own): none when unset, and none (with a note, the option cleared so that the summary says
    so) when paamd has fewer cores of its own than the threads that would never sleep."""
    n = getattr(args, "server_spin_buckets", None)
    if not n:
        return []
    if len(server_cpus) < n + 1:
        print(f"  --server-spin-buckets {n} ignored: {len(server_cpus)} core(s) left to paamd "
              f"for {n + 1} threads that never sleep", flush=True)
        args.server_spin_buckets = None
        return []
    return ["--spin-buckets", str(min(n, buckets))]


def cuda_wait_args(args: argparse.Namespace) -> list[str]:
    """paamd's --cuda-wait for ``--server-cuda-wait`` on the cuda backend (none when unset)."""
    wait = getattr(args, "server_cuda_wait", None)
    return ["--cuda-wait", wait] if wait and getattr(args, "backend", "cpu") == "cuda" else []


def server_poll_label(args: argparse.Namespace) -> str:
    poll = getattr(args, "server_poll_us", None)
    label = "paamd's default" if poll is None else poll if poll == "always" else f"{poll} us"
    spin = getattr(args, "server_spin_buckets", None)
    return label + (f", spin buckets {spin}" if spin else "")


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


@contextlib.contextmanager
def environ(values: dict[str, str]):
    """``os.environ`` with ``values`` set inside the block (for the processes started there),
    restored after it."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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


def server_pin_label(args: argparse.Namespace) -> str:
    label = "one per core" if getattr(args, "server_pin", False) else "not pinned"
    n = getattr(args, "server_cores", None)
    if n is not None:
        label += f", on {n} core{'s' if n > 1 else ''}"
    if cuda_wait_args(args):
        label += f", CUDA wait {args.server_cuda_wait}"
    elif getattr(args, "backend", "cpu") == "cuda":  # (paamd's default was spin until 2026-11-24)
        wait = os.environ.get("PAAM_CUDA_WAIT") or PAAMD_CUDA_WAIT
        label += f", CUDA wait {wait} (paamd's default)"
    return label


def direct_wait_label(args: argparse.Namespace, methods) -> str:
    """How the direct methods' clients (ROS 2, PiCAS) wait for their kernels on the cuda
    backend: $PAAM_CUDA_WAIT, else spinning as a plain CUDA program. "" on the cpu backend or
    when ``methods`` has no direct method."""
    if getattr(args, "backend", "cpu") != "cuda" or all(m == "PAAM" for m in methods):
        return ""
    env = os.environ.get("PAAM_CUDA_WAIT")
    return (f"direct clients' CUDA wait: {env} ($PAAM_CUDA_WAIT)" if env else
            f"direct clients' CUDA wait: {DIRECT_CUDA_WAIT} (CUDA's default for one context)")


def threading_native_id() -> int:
    import threading
    return threading.get_native_id()


# -- load ---------------------------------------------------------------------------------------


def _stress_main(cpu: int, stop_at: float) -> None:
    """A stress-ng-like mix on one core: arithmetic, memory churn (cache and TLB), and short
    sleeps (timer events and scheduler work)."""
    pin_this_thread([cpu])
    buf = np.empty(8 << 20, dtype=np.uint8)  # 8 MiB: larger than a core's share of the LLC
    i = 0
    x = 1.0
    while time.monotonic() < stop_at:
        i += 1
        for _ in range(2000):
            x = x * 1.0000001 + 1e-9
        buf[(i * 4096) % buf.size::4096] += 1
        if i % 8 == 0:
            time.sleep(0.0002)


@contextlib.contextmanager
def stress(cpus: Sequence[int], per_cpu: int = 2, max_sec: float = 3600.0) -> Iterator[list[int]]:
    """Busy processes (``per_cpu`` per core) on ``cpus`` while the block runs; stress-ng's
    ``--cpu --vm --timer`` mix when stress-ng is installed, else a built-in Python stressor."""
    procs: list[Any] = []
    stop_at = time.monotonic() + max_sec
    exe = _which("stress-ng")
    try:
        for cpu in cpus:
            if exe:
                procs.append(subprocess.Popen(
                    ["taskset", "-c", str(cpu), exe, "--cpu", str(per_cpu), "--vm", "1",
                     "--vm-bytes", "32M", "--timer", "1", "-t", f"{int(max_sec)}s", "-q"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            else:
                ctx = mp.get_context("spawn")
                for _ in range(per_cpu):
                    p = ctx.Process(target=_stress_main, args=(cpu, stop_at), daemon=True)
                    p.start()
                    procs.append(p)
        yield [p.pid for p in procs]
    finally:
        stop_processes(procs)


def stop_processes(procs: Iterable[Any], timeout: float = 5.0) -> None:
    """SIGTERM each process (subprocess.Popen or multiprocessing.Process), SIGKILL after
    ``timeout`` seconds, and reap it."""
    for p in procs:
        if isinstance(p, subprocess.Popen):
            p.terminate()
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        else:
            p.terminate()
            p.join(timeout)
            if p.is_alive():
                p.kill()
                p.join()


def add_executor_wait_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor-wait", default="own", choices=("own", "rclpy"),
                   help="how the PicasExecutor (PiCAS and PAAM) waits for work: with its own "
                        "wait, which keeps the entity lists and the wait set between waits "
                        "(default), or through rclpy's, which rebuilds both in Python at every "
                        "wait (as before 2026-11-24; paam.ros._readiness)")


GC_MODES = ("default", "freeze", "off")


def add_gc_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gc", default="default", choices=GC_MODES,
                   help="Python's cyclic garbage collector in each executor process during the "
                        "measured run: as Python has it (default); frozen once the process is "
                        "set up (gc.freeze: what exists then is never scanned again, so "
                        "collections stay short); or off (gc.disable: no collector pauses, "
                        "cycles kept until the run ends). Its pauses are recorded either way")


class GcPauses:
    """Every run of Python's cyclic collector in this process while the block runs: (generation,
    start, duration) in CLOCK_MONOTONIC ns (:meth:`array`). A full collection holds the GIL for
    as long as it takes to scan every tracked object: a pause of the executor that the analysis
    does not know. ``mode`` (one of :data:`GC_MODES`, :func:`add_gc_argument`) is applied on
    entry and undone on exit."""

    def __init__(self, mode: str = "default") -> None:
        if mode not in GC_MODES:
            raise ValueError(f"gc mode {mode!r}: one of {', '.join(GC_MODES)}")
        self.mode, self._rows, self._t0 = mode, [], 0

    def _cb(self, phase: str, info: dict) -> None:
        now = time.monotonic_ns()
        if phase == "start":
            self._t0 = now
        else:
            self._rows.append((info.get("generation", -1), self._t0, now - self._t0))

    def __enter__(self) -> "GcPauses":
        import gc
        if self.mode == "freeze":
            gc.collect()
            gc.freeze()
        elif self.mode == "off":
            gc.disable()
        gc.callbacks.append(self._cb)
        return self

    def __exit__(self, *exc) -> None:
        import gc
        gc.callbacks.remove(self._cb)
        if self.mode == "off":
            gc.enable()
        elif self.mode == "freeze":
            gc.unfreeze()

    def array(self) -> np.ndarray:
        return np.asarray(self._rows, dtype=np.int64).reshape(-1, 3)


class ThreadSchedStat:
    """The calling thread's scheduler counters: ns it ran on a CPU (CLOCK_THREAD_CPUTIME_ID,
    exact to the call; schedstat's own first field moves only at ticks and switches) and ns it
    was runnable but waited for one (``/proc/thread-self/schedstat``'s second field, Linux with
    schedstats: complete whenever the thread itself reads it). :meth:`read` returns (-1, -1)
    where there is no schedstat. Each thread opens the file once and keeps it open (one
    descriptor per thread that reads, until the process ends); a read is about 1 µs from
    Python. Under a hypervisor the time it took from a vCPU (steal) is in neither."""

    def __init__(self) -> None:
        import threading
        self._local = threading.local()

    def read(self) -> tuple[int, int]:
        fd = getattr(self._local, "fd", None)
        if fd is None:
            try:
                fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
            except OSError:
                fd = -1
            self._local.fd = fd
        if fd < 0:
            return (-1, -1)
        try:
            waited = int(os.pread(fd, 96, 0).split()[1])
        except (OSError, ValueError, IndexError):
            return (-1, -1)
        return time.thread_time_ns(), waited


def gc_summary(pauses: np.ndarray) -> dict[str, Any]:
    """Collections per generation and the longest pause (ms) of one process's
    :meth:`GcPauses.array`."""
    out: dict[str, Any] = {}
    for gen in (0, 1, 2):
        d = pauses[pauses[:, 0] == gen, 2] / 1e6 if len(pauses) else np.zeros(0)
        out[f"gen{gen}"] = {"n": int(d.size), "max_ms": float(d.max()) if d.size else 0.0,
                            "total_ms": float(d.sum())}
    return out


def gc_line(by_process: Iterable[dict[str, Any]]) -> str:
    """summary.txt's text for :func:`gc_summary` of a run's processes: collections per
    generation summed, and the longest pause of any."""
    by = list(by_process)
    n = [sum(e[f"gen{k}"]["n"] for e in by) for k in (0, 1, 2)]
    longest = max((e[f"gen{k}"]["max_ms"] for e in by for k in (0, 1, 2)), default=0.0)
    return f"{n[0]}/{n[1]}/{n[2]}, longest {fmt(longest, 2)}"


def gc_instances(ends_ns, spans_ms, pauses: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
    """How many instances (their end in ns and length in ms, as :func:`steal_around` takes them)
    had one of ``pauses`` (a process's :meth:`GcPauses.array`) inside them, and the ms of
    collection each of those held; with the mask of them."""
    ends = np.asarray(ends_ns, dtype=np.int64)
    starts = ends - (np.asarray(spans_ms, dtype=np.float64) * 1e6).astype(np.int64)
    inside = overlaps(starts, ends, pauses) / 1e6
    hit = inside > 0
    return {"instances": int(len(inside)), "during_a_collection": int(hit.sum()),
            "collection_ms_inside": summarize(inside[hit]) if hit.any() else None}, hit


def overlaps(starts_ns, ends_ns, pauses: np.ndarray) -> np.ndarray:
    """Per interval [start, end]: ns of ``pauses`` (:meth:`GcPauses.array`) inside it."""
    s, e = np.asarray(starts_ns, np.int64), np.asarray(ends_ns, np.int64)
    out = np.zeros(len(s), dtype=np.int64)
    for _gen, p0, dur in pauses:
        lo, hi = np.maximum(s, p0), np.minimum(e, p0 + dur)
        out += np.clip(hi - lo, 0, None)
    return out


def synchronous_start(sync: dict, name: str, timers: Iterable[Any], timeout: float) -> int:
    """In an executor process: says it is ready, waits for the parent's go and the common start
    time, then starts every one of ``timers`` at once (synchronous release). Returns the start,
    CLOCK_MONOTONIC ns. ``sync``: the parent's ``ready`` queue, ``go`` event, ``start_at``."""
    sync["ready"].put(name)
    if not sync["go"].wait(timeout):
        raise RuntimeError("no start signal from the parent")
    left = sync["start_at"].value - time.monotonic()
    if left > 0:
        time.sleep(left)
    start = time.monotonic_ns()
    for t in timers:
        t.reset()
    return start


def child_failed(path: str, exc: BaseException) -> None:
    """In a worker process: leave ``exc`` and its traceback at ``path``.err for
    :func:`join_child` to report (a raised exception dies with the child)."""
    import traceback
    Path(path + ".err").write_text(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")


def join_child(proc: Any, path: str, what: str, timeout: float) -> None:
    """Waits up to ``timeout`` s for a worker process, then stops the run with a clear error if
    it hung (killed) or failed (its :func:`child_failed` note): nothing is left running."""
    proc.join(max(1.0, timeout))
    if proc.is_alive():
        proc.kill()
        raise SystemExit(f"{what} did not finish")
    if os.path.exists(path + ".err"):
        raise SystemExit(f"{what} failed: {Path(path + '.err').read_text()}")


def _awake_main(cpu: int, stop_at: float) -> None:
    pin_this_thread([cpu])
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError):
        os.nice(19)
    while time.monotonic() < stop_at:
        pass


@contextlib.contextmanager
def keep_awake(cpus: Sequence[int], max_sec: float = 3600.0) -> Iterator[list[int]]:
    """One SCHED_IDLE busy loop per core of ``cpus`` while the block runs: the core is never
    idle, so a thread woken there is switched to at once, without the exit from a halted
    (virtual) CPU that a guest whose cpuidle driver is "none" pays on every idle wake-up (user
    space's idle=poll). A thread that wakes preempts the loop at once; it costs power, a share of
    the core against other SCHED_IDLE threads (best-effort executors), and, beside a thread
    that never sleeps, an occasional slice (keep it off such cores: :func:`awake_cpus`)."""
    ctx = mp.get_context("spawn")
    stop_at = time.monotonic() + max_sec
    procs = [ctx.Process(target=_awake_main, args=(cpu, stop_at), daemon=True) for cpu in cpus]
    try:
        for p in procs:
            p.start()
        yield [p.pid for p in procs]
    finally:
        stop_processes(procs)


# -- the host: what the (virtual) CPUs did while a run ran ----------------------------------------

# A second in which the host took at most this from all CPUs together counts as quiet: on the
# lent H100 guest of 2026-11-23 (16 vCPUs), 96% of the seconds of the PiCAS and ROS 2 runs were.
QUIET_STEAL_MS = 50.0


def parse_proc_stat(text: str) -> dict[int, tuple[int, int]]:
    """Per CPU of a /proc/stat text: (busy, steal) in USER_HZ ticks since boot. Busy is user +
    nice + system + irq + softirq; steal is the time the hypervisor ran something else while the
    virtual CPU wanted to run (0 on bare metal)."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 9 or not f[0].startswith("cpu") or f[0] == "cpu":
            continue
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in f[1:9])
        out[int(f[0][3:])] = (user + nice + system + irq + softirq, steal)
    return out


class HostStat:
    """/proc/stat sampled every ``interval`` seconds on a daemon thread while the block runs.

    :meth:`series` gives, per interval, its end (CLOCK_MONOTONIC ns, the clock of the runs'
    stamps) and each CPU's busy and stolen milliseconds in it. Where /proc/stat cannot be read
    (not Linux), the series is empty and ``error`` says why; the run goes on.
    """

    def __init__(self, interval: float = 1.0, path: str = "/proc/stat") -> None:
        import threading
        self.interval, self.path, self.error = interval, path, ""
        self._samples: list[tuple[int, dict[int, tuple[int, int]]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="paam-hoststat", daemon=True)
        try:
            self._ms_per_tick = 1000.0 / os.sysconf("SC_CLK_TCK")
        except (ValueError, OSError, AttributeError):
            self._ms_per_tick = 10.0

    def __enter__(self) -> "HostStat":
        self._sample()
        if not self.error:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if not self.error:
            self._sample()

    def _sample(self) -> None:
        try:
            with open(self.path) as f:
                text = f.read()
        except OSError as e:
            self.error = f"{self.path}: {e.strerror or e}"
            return
        cpus = parse_proc_stat(text)
        if cpus:
            self._samples.append((time.monotonic_ns(), cpus))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def series(self) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray]:
        """(interval ends ns [n], the CPUs, busy ms [n, cpus], steal ms [n, cpus]); CPUs that
        came or went during the run are left out."""
        return proc_stat_deltas([t for t, _s in self._samples],
                                [s for _t, s in self._samples], self._ms_per_tick)


def proc_stat_deltas(times: Sequence[int], stats: Sequence[dict[int, tuple[int, int]]],
                     ms_per_tick: float) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray]:
    """Consecutive :func:`parse_proc_stat` samples taken at ``times`` as (interval ends [n],
    the CPUs, busy ms [n, cpus], steal ms [n, cpus]); CPUs that came or went are left out."""
    if len(stats) < 2:
        return np.zeros(0, np.int64), [], np.zeros((0, 0)), np.zeros((0, 0))
    cpus = sorted(set.intersection(*(set(s) for s in stats)))
    a = np.array([[s[c] for c in cpus] for s in stats], dtype=np.float64)
    d = np.diff(a, axis=0) * ms_per_tick
    return np.asarray(times, dtype=np.int64)[1:], cpus, d[:, :, 0], d[:, :, 1]


def steal_around(ends_ns, spans_ms, t_ns, steal_ms) -> np.ndarray:
    """For each instance (its end, its length), the most the host stole from all CPUs together
    in one interval that overlaps it, widened by one interval each side (the samples are
    coarse; an instance past either end of the samples gets the nearest one); NaN for every
    instance when there are no samples."""
    t = np.asarray(t_ns, dtype=np.int64)
    ends = np.asarray(ends_ns, dtype=np.int64)
    out = np.full(len(ends), np.nan)
    if not len(t):
        return out
    per = np.asarray(steal_ms, dtype=np.float64).reshape(len(t), -1).sum(axis=1)
    starts = ends - (np.asarray(spans_ms, dtype=np.float64) * 1e6).astype(np.int64)
    lo = np.clip(np.searchsorted(t, starts) - 1, 0, len(t) - 1)
    hi = np.clip(np.searchsorted(t, ends) + 1, 0, len(t) - 1)
    for i, (a, b) in enumerate(zip(lo, hi)):
        out[i] = per[a:b + 1].max()
    return out


def split_by_steal(values, steal, quiet_ms: float = QUIET_STEAL_MS) -> dict[str, Any]:
    """``values`` (one per instance) summarized apart for the instances the host left alone
    (steal around them at most ``quiet_ms`` per interval) and the others, with their
    correlation."""
    v = np.asarray(values, dtype=np.float64)
    s = np.asarray(steal, dtype=np.float64)
    ok = ~np.isnan(s)
    v, s = v[ok], s[ok]
    return {"quiet_steal_ms": quiet_ms, "quiet": summarize(v[s <= quiet_ms]),
            "noisy": summarize(v[s > quiet_ms]), "correlation": correlation(v, s)}


def correlation(x, y) -> float:
    """Pearson's r of two equally long series; NaN with fewer than three values or where
    either is constant."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) <= 2 or x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


# A vCPU busy at least this share of the time counts as one the guest used (host_summary).
ACTIVE_BUSY_MS_PER_S = 50.0


def steal_text(host: dict[str, Any]) -> str:
    """summary.txt's text for :func:`host_summary`: ms stolen per second from all CPUs, mean /
    max, and (in brackets) from the executors' cores; then how many vCPUs the guest used and
    how many CPUs' worth it kept busy (a host steals only from vCPUs that run)."""
    a, e = host["steal_ms_per_s"], host["steal_ms_per_s_executor_cpus"]
    text = (f"{fmt(a['mean'], 0)} / {fmt(a['max'], 0)} "
            f"({fmt(e['mean'], 0)} / {fmt(e['max'], 0)})")
    if "active_cpus" in host:  # summaries written before it have none
        text += (f", {len(host['active_cpus'])} vCPUs used, "
                 f"{fmt(host['busy_ms_per_s']['mean'] / 1000.0, 2)} CPUs busy")
    return text


def host_panel(label: str, r: dict, ends_ns, latency_ms) -> tuple | None:
    """One :func:`plot_host` panel of a run (its :func:`host_series` keys and ``t0_ns``): the
    instances and the steal in s from the run's start; None where the host was not sampled."""
    t = r.get("host_t_ns")
    if t is None or not len(t):
        return None
    return (label, (np.asarray(ends_ns) - r["t0_ns"]) / 1e9, latency_ms,
            (np.asarray(t) - r["t0_ns"]) / 1e9, r["host_steal_ms"].sum(axis=1))


def host_series(host: HostStat) -> dict[str, Any]:
    """A finished :class:`HostStat` as a run's result keys, the form :func:`host_summary` and
    :func:`host_rows` read: interval ends (``host_t_ns``, CLOCK_MONOTONIC ns), the CPUs, busy
    and stolen ms per CPU and interval, and why there are none (``host_error``)."""
    t, cpus, busy, steal = host.series()
    return {"host_t_ns": t, "host_cpus": cpus, "host_busy_ms": busy, "host_steal_ms": steal,
            "host_error": host.error}


def _host_columns(r: dict, executor_cpus: Iterable[int]) -> list[int]:
    """The columns of the executors' cores in a run's host series, each core once (executors
    mapped onto one core share it)."""
    cpus = list(r["host_cpus"])
    return [cpus.index(c) for c in sorted(set(executor_cpus)) if c in cpus]


def host_summary(r: dict, executor_cpus: Iterable[int]) -> dict[str, Any]:
    """What the host took from the CPUs during a run (:func:`host_series` keys of ``r``), per
    sample summed over all CPUs and over the executors' cores; ``error`` where there are not
    two samples to take a difference of."""
    t, steal = r.get("host_t_ns"), r.get("host_steal_ms")
    if t is None or not len(t):
        return {"error": r.get("host_error") or "fewer than two samples"}
    ex = _host_columns(r, executor_cpus)
    busy = r["host_busy_ms"]
    per_cpu = {int(c): {"busy_ms_per_s": float(b), "steal_ms_per_s": float(x)}
               for c, b, x in zip(r["host_cpus"], busy.mean(axis=0), steal.mean(axis=0))}
    return {"samples": int(len(t)), "steal_ms_per_s": summarize(steal.sum(axis=1)),
            "steal_ms_per_s_executor_cpus": summarize(steal[:, ex].sum(axis=1)),
            "busy_ms_per_s": summarize(busy.sum(axis=1)),
            "active_cpus": [c for c, v in per_cpu.items()
                            if v["busy_ms_per_s"] >= ACTIVE_BUSY_MS_PER_S],
            "per_cpu": per_cpu}


def host_rows(r: dict, executor_cpus: Iterable[int], t0_ns: int) -> list[dict[str, Any]]:
    """host_stat.csv's rows of a run, one per /proc/stat sample (t_s: seconds since ``t0_ns``,
    the clock of the run's other CSV files): busy and stolen ms of all CPUs, stolen ms of the
    executors' cores, stolen and busy ms of each CPU."""
    t = r.get("host_t_ns")
    if t is None or not len(t):
        return []
    cpus, ex = r["host_cpus"], _host_columns(r, executor_cpus)
    return [{"t_s": round((int(ti) - t0_ns) / 1e9, 3), "busy_ms": float(b.sum()),
             "steal_ms": float(st.sum()), "steal_ms_executor_cpus": float(st[ex].sum()),
             **{f"steal_ms_cpu{c}": float(x) for c, x in zip(cpus, st)},
             **{f"busy_ms_cpu{c}": float(x) for c, x in zip(cpus, b)}}
            for ti, b, st in zip(t, r["host_busy_ms"], r["host_steal_ms"])]


def stress_tool() -> str:
    return "stress-ng (--cpu 2 --vm 1 --timer 1 per core)" if _which("stress-ng") else \
        "built-in stressor (2 processes per core: arithmetic, 8 MiB memory churn, 0.2 ms sleeps)"


def _which(name: str) -> str | None:
    import shutil
    return shutil.which(name)


# -- plotting -----------------------------------------------------------------------------------


COLORS = {"ROS 2": "#e8a04c", "PiCAS": "#8c6bb1", "PAAM": "#4c9be8", "bound": "#333333"}


def plot_host(panels: list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
              path: Path, title: str, ylabel: str = "hot path (ms)",
              bounds: Sequence[float | None] | None = None) -> None:
    """One panel per run: each instance's latency at its time (dots, left axis) and what the
    host stole from all CPUs in each second (shaded, right axis): whether the slow instances
    fall where the hypervisor took the CPUs away.
    ``panels``: (label, instance t_s, latency ms, sample t_s, steal ms per sample); ``bounds``:
    per panel a latency bound drawn dashed (off scale beyond 1.5x the largest latency: then
    named). A panel's color is its method's: the label, or the label past its first word."""
    plt = pyplot()
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.2 * len(panels) + 0.6),
                             squeeze=False)
    stop = max([float(np.max(p[4])) for p in panels if len(p[4])] + [50.0]) * 1.1
    for i, (ax, (label, ts, lat, ht, steal)) in enumerate(zip(axes[:, 0], panels)):
        ax2 = ax.twinx()
        ax2.fill_between(ht, steal, step="pre", color="#999999", alpha=0.35, lw=0)
        ax2.set_ylim(0, stop)
        ax2.set_ylabel("stolen ms/s", fontsize=8, color="#666666")
        ax.set_zorder(ax2.get_zorder() + 1)
        ax.patch.set_visible(False)
        ax.plot(ts, lat, ".", ms=2,
                color=COLORS.get(label, COLORS.get(label.split(" ", 1)[-1], "#4c9be8")))
        top = float(np.max(lat)) if len(lat) else 1.0
        b = bounds[i] if bounds else None
        if b is not None and math.isfinite(b) and b <= 1.5 * top:
            ax.axhline(b, color=COLORS["bound"], ls="--", lw=0.8)
            top = max(top, b)
        elif bounds:
            ax.text(0.99, 0.95, f"bound {b:.1f} ms (off scale)" if b is not None
                    and math.isfinite(b) else "unbounded",
                    transform=ax.transAxes, ha="right", va="top", fontsize=7)
        ax.set_ylim(0, top * 1.1)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(label, fontsize=8, loc="left")
    axes[-1, 0].set_xlabel("time in the run (s)")
    fig.suptitle(title, fontsize=9)
    save(fig, path)
