"""CPU placement and the OS scheduling of threads: which cores the device and the clients get,
pinning, a thread's OS priority, and its scheduler counters."""
from __future__ import annotations

import os
import threading
import time
from typing import Iterable, Sequence

from paam.ros.rt import apply_rt


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
    """The calling thread on ``cpus``; False where the OS refuses."""
    try:
        os.sched_setaffinity(0, set(cpus))
        return True
    except (OSError, AttributeError):
        return False


def threading_native_id() -> int:
    """The calling thread's kernel thread id."""
    return threading.get_native_id()


def apply_priority(rt_priority: int | None, mode: str = "auto") -> str:
    """Give the calling thread an OS priority and say what it got.

    ``mode``: ``fifo`` (SCHED_FIFO ``rt_priority`` or nothing), ``nice`` (nice value mapped from
    the RT priority: 90 → -20, one step per priority level, at most 0), ``auto`` (fifo when
    permitted, else nice: the fallback for machines that deny SCHED_FIFO), ``none``.
    The implementation is :func:`paam.ros.rt.apply_rt` (no ROS needed); this returns its
    ``priority_summary``.
    """
    return apply_rt(rt_priority, None, mode=mode, log=lambda _line: None).priority_summary


class ThreadSchedStat:
    """The calling thread's scheduler counters: ns it ran on a CPU (CLOCK_THREAD_CPUTIME_ID,
    exact to the call; schedstat's own first field moves only at ticks and switches) and ns it
    was runnable but waited for one (``/proc/thread-self/schedstat``'s second field, Linux with
    schedstats: complete whenever the thread itself reads it). :meth:`read` returns (-1, -1)
    where there is no schedstat. Each thread opens the file once and keeps it open (one
    descriptor per thread that reads, until the process ends); a read is about 1 µs from
    Python. Under a hypervisor the time it took from a vCPU (steal) is in neither."""

    def __init__(self) -> None:
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


def at_normal_priority(call):
    """Runs ``call()`` at SCHED_OTHER nice 0, then restores the thread's scheduling, and returns
    what it returned: a GPU time-slices its contexts whatever their CPU priority, so a direct
    kernel on the CPU backend's device core must not keep the executor's priority."""
    saved = os.sched_getscheduler(0), os.sched_getparam(0), os.getpriority(os.PRIO_PROCESS, 0)
    try:
        if saved[0] != os.SCHED_OTHER:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        if saved[2] != 0:
            os.setpriority(os.PRIO_PROCESS, 0, 0)
    except OSError:
        pass
    try:
        return call()
    finally:
        try:
            if saved[0] != os.SCHED_OTHER:
                os.sched_setscheduler(0, saved[0], saved[1])
            if saved[2] != 0:
                os.setpriority(os.PRIO_PROCESS, 0, saved[2])
        except OSError:
            pass
