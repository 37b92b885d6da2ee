"""Processes around a run: worker processes that start together and report their failures, a
CPU stressor, busy loops that keep cores from idling, and their clean-up."""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from paam_experiments.common.cpus import pin_this_thread


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


# -- worker processes ---------------------------------------------------------------------------


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


# -- load and idle cores ------------------------------------------------------------------------


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
    that never sleeps, an occasional slice (keep it off such cores:
    :func:`paam_experiments.common.server.awake_cpus`). Yields the loops' pids."""
    ctx = mp.get_context("spawn")
    stop_at = time.monotonic() + max_sec
    procs = [ctx.Process(target=_awake_main, args=(cpu, stop_at), daemon=True) for cpu in cpus]
    try:
        for p in procs:
            p.start()
        yield [p.pid for p in procs]
    finally:
        stop_processes(procs)


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


def stress_tool() -> str:
    """What :func:`stress` runs on this machine, for a summary."""
    return "stress-ng (--cpu 2 --vm 1 --timer 1 per core)" if shutil.which("stress-ng") else \
        "built-in stressor (2 processes per core: arithmetic, 8 MiB memory churn, 0.2 ms sleeps)"


@contextlib.contextmanager
def stress(cpus: Sequence[int], per_cpu: int = 2, max_sec: float = 3600.0) -> Iterator[list[int]]:
    """Busy processes (``per_cpu`` per core) on ``cpus`` while the block runs; stress-ng's
    ``--cpu --vm --timer`` mix when stress-ng is installed, else a built-in Python stressor.
    Yields their pids."""
    procs: list[Any] = []
    stop_at = time.monotonic() + max_sec
    exe = shutil.which("stress-ng")
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
