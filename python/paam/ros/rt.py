"""Real-time knobs for the calling thread: an OS priority and CPU affinity.

The one implementation of "give this thread a real-time priority, or the best the machine
allows" in paam: :class:`paam.ros.PicasExecutor` (``spin_rt``), the bridge, and the evaluation
(the experiments' ``apply_priority``, ``--rt auto|fifo|nice``) all use :func:`apply_rt`.

Modes (``mode=``):

* ``auto`` (default): SCHED_FIFO at the requested priority; where the machine refuses it
  (EPERM: no CAP_SYS_NICE and no rtprio limit, as on machines that allow ``nice -20`` but not
  SCHED_FIFO), the thread's nice value from :func:`nice_for` instead; where that is refused
  too, the thread stays SCHED_OTHER at its current nice value.
* ``fifo``: SCHED_FIFO or nothing.
* ``nice``: the nice value only (what a machine that denies SCHED_FIFO gets).
* ``none``: leave the policy alone (affinity is still applied).

``best_effort=True`` (an executor that serves only best-effort chains): where ``auto`` or
``nice`` would give a nice value, the thread gets SCHED_IDLE instead. A nice value only weights
the fair scheduler: a nice 0 best-effort executor sharing a core with a nice -20 critical one
still holds the core for up to a scheduler slice (milliseconds) when the critical one wakes.
SCHED_IDLE threads are preempted at once by any other SCHED_OTHER thread, which is the order
SCHED_FIFO would give the two, and any user may ask for it. (The cost: a SCHED_IDLE thread also
yields to every unrelated SCHED_OTHER thread on its core.)

The nice ladder (:func:`nice_for`): RT priority 90 and above → nice -20, then one nice step per
priority step down (89 → -19, 80 → -10, ...), RT priority 70 and below → nice 0. So a higher RT
priority never gets a higher nice value, and the executors of a system keep their relative order
as long as their priorities lie in 70..90 (paam's configurations use 70..90).

An invalid SCHED_FIFO priority (EINVAL: outside 1..99) is a configuration error, not a refusal:
it is reported and not mapped to a nice value.

A process that takes SCHED_FIFO before rclpy starts (as ``chrt`` does to a C++ executor) gives
Fast DDS's threads that priority too, which is right for the threads that deliver messages and
can livelock its sender thread on a shared core: create the context and the first node inside
:func:`dds_threads_rt`, which keeps that one thread at SCHED_OTHER (its docstring says why).

A thread given a nice value also gets the least timer slack (:data:`TIMER_SLACK_NS`), as a
SCHED_FIFO thread has none: see :func:`_apply_timer_slack`.

The CPU affinity is applied whenever one is asked for, whatever happens to the priority.
Nothing here raises because a knob was denied (DESIGN.md: "nothing fails because a machine
denies them"); :func:`apply_rt` returns an :class:`RtReport` and writes one line saying what was
applied. No ROS dependency (importable without rclpy).
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import os
import threading
import time
from typing import Callable, Iterator, Optional

__all__ = ["RtReport", "apply_rt", "dds_threads_rt", "lock_memory", "nice_for", "MODES",
           "NICE_TOP_PRIORITY"]

MODES = ("auto", "fifo", "nice", "none")

#: The RT priority that maps to nice -20 (and every priority above it).
NICE_TOP_PRIORITY = 90

_logger = logging.getLogger("paam.rt")


def nice_for(rt_priority: int) -> int:
    """The nice value standing in for SCHED_FIFO ``rt_priority`` (see the module docstring):
    ``-20 + (90 - rt_priority)``, clamped to -20..0."""
    return max(-20, min(0, -20 + (NICE_TOP_PRIORITY - int(rt_priority))))


@dataclasses.dataclass
class RtReport:
    """What :func:`apply_rt` asked for and what the calling thread got.

    ``policy`` is what the thread runs under afterwards, as far as this call is concerned:
    ``"SCHED_FIFO"``, ``"nice"`` (SCHED_OTHER at ``nice``), ``"SCHED_IDLE"`` (a best-effort
    thread's fallback) or ``"SCHED_OTHER"`` (nothing applied; also when no priority was asked
    for). ``priority_applied`` is True only for SCHED_FIFO; ``fallback`` is True when a nice
    value or SCHED_IDLE stands in for a refused SCHED_FIFO.
    """

    requested_priority: int | None
    requested_cpu: int | None
    mode: str = "auto"
    priority_applied: bool = False
    cpu_applied: bool = False
    policy: str = "SCHED_OTHER"
    nice: int | None = None
    fallback: bool = False
    best_effort: bool = False
    fifo_error: OSError | None = None
    nice_error: OSError | None = None
    #: set on the nice fallback: the thread's timer slack afterwards (``None``: left alone)
    timer_slack_ns: int | None = None
    messages: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when everything that was requested was applied as requested (SCHED_FIFO for
        ``auto``/``fifo``, the nice value for ``nice``; a fallback is not ``ok``)."""
        if self.requested_priority is None or self.mode == "none":
            prio_ok = True
        elif self.mode == "nice":
            prio_ok = self.policy == ("SCHED_IDLE" if self.best_effort else "nice")
        else:
            prio_ok = self.priority_applied
        return prio_ok and (self.requested_cpu is None or self.cpu_applied)

    @property
    def priority_summary(self) -> str:
        """The priority outcome in a few words (``paam eval``'s result files record this)."""
        p, n = self.requested_priority, self.nice
        if p is None or self.mode == "none":
            return "SCHED_OTHER nice 0"
        if self.priority_applied:
            return f"SCHED_FIFO {p}"
        if self.mode == "fifo":
            return f"SCHED_FIFO {p} denied ({self.fifo_error}); SCHED_OTHER"
        if self.policy == "SCHED_IDLE":
            return "SCHED_IDLE (fallback)" if self.fallback else "SCHED_IDLE"
        if n is None:  # auto, SCHED_FIFO failed for a reason other than a refusal
            return f"SCHED_FIFO {p} not applied ({self.fifo_error}); SCHED_OTHER"
        if self.policy == "nice":
            return f"nice {n} (fallback)" if self.fallback else f"nice {n}"
        return f"nice {n} denied ({self.nice_error}); nice 0"

    def __str__(self) -> str:
        return "; ".join(self.messages) if self.messages else "no real-time settings requested"


def _explain_fifo_error(err: OSError, priority: int) -> str:
    """Why SCHED_FIFO ``priority`` was not applied (the caller says what happens instead)."""
    if err.errno == errno.EPERM:
        return (f"SCHED_FIFO priority {priority} denied (EPERM): needs CAP_SYS_NICE or an "
                f"rtprio limit >= {priority} (ulimit -r, /etc/security/limits.conf)")
    if err.errno == errno.EINVAL:
        lo = os.sched_get_priority_min(os.SCHED_FIFO)
        hi = os.sched_get_priority_max(os.SCHED_FIFO)
        return f"SCHED_FIFO priority {priority} invalid (EINVAL): valid range is {lo}..{hi}"
    return f"SCHED_FIFO priority {priority} not applied ({err})"


def _refused(err: BaseException) -> bool:
    """SCHED_FIFO refused by the machine (as opposed to asked for wrongly)."""
    return not isinstance(err, OSError) or err.errno in (errno.EPERM, errno.EACCES, errno.ENOSYS)


def _apply_affinity(report: RtReport, cpu: int) -> None:
    if not hasattr(os, "sched_setaffinity"):
        report.messages.append(f"CPU affinity not supported on this platform; cpu {cpu} "
                               "not applied")
        return
    allowed = sorted(os.sched_getaffinity(0))
    try:
        os.sched_setaffinity(0, {cpu})
        report.cpu_applied = True
        report.messages.append(f"pinned to CPU {cpu}")
    except OSError as err:
        report.messages.append(f"CPU {cpu} not applied ({os.strerror(err.errno or 0) or err}); "
                               f"thread may run on CPUs {allowed}")


def _apply_nice(report: RtReport, priority: int, *, fallback: bool) -> None:
    nice = nice_for(priority)
    report.nice = nice
    report.fallback = fallback
    how = f"nice {nice} (from RT priority {priority})"
    try:
        # On Linux, PRIO_PROCESS with a thread id sets that one thread's nice value.
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (OSError, AttributeError) as err:
        report.nice_error = err if isinstance(err, OSError) else OSError(str(err))
        report.messages.append(f"{how} denied ({report.nice_error}); thread stays SCHED_OTHER "
                               "at its nice value")
        return
    report.policy = "nice"
    report.messages.append(f"{how} instead" if fallback else how)
    _apply_timer_slack(report)


_PR_SET_TIMERSLACK = 29  # prctl(2)
_PR_GET_TIMERSLACK = 30

#: The timer slack (ns) a thread on the nice fallback gets: the least Linux allows (0 would mean
#: "back to the default").
TIMER_SLACK_NS = 1


def _apply_timer_slack(report: RtReport) -> None:
    """Give the calling thread the least timer slack. Linux lets a SCHED_OTHER thread's timed
    waits end up to its slack (50 µs by default) late; SCHED_FIFO threads have none. Every
    zero-timeout poll of a wait set in rmw_fastrtps is such a wait (a futex wait until "now"),
    so at the default slack each one sleeps about 50 µs, and a timer's wake-up can come that
    much late: on the nice fallback this took the PicasExecutor's cost per callback from 110 to
    63 µs (``paam ros-bench``'s executor part, 2-core VM, 2026-11-24); on the lent H100 host
    it made no measurable difference (docs/ros2.md)."""
    import ctypes
    prctl = _libc_prctl()
    if not prctl:
        report.messages.append("timer slack left at the default (no prctl here)")
        return
    if prctl(_PR_SET_TIMERSLACK, ctypes.c_ulong(TIMER_SLACK_NS), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        report.messages.append(f"timer slack left at the default ({os.strerror(err)})")
        return
    report.timer_slack_ns = TIMER_SLACK_NS
    report.messages.append(f"timer slack {TIMER_SLACK_NS} ns")
    _slack.tight = True


# per thread: whether its slack was seen at TIMER_SLACK_NS, so that tighten_timer_slack need not
# ask again. A thread's slack changes only by its own prctl or by its policy: Linux gives a
# SCHED_FIFO thread none and a thread back from SCHED_FIFO to SCHED_OTHER the default (50 µs).
# This flag does not see the latter; no thread of paam's takes SCHED_FIFO after its slack was
# set here (apply_rt sets it on the nice fallback only, and a SCHED_FIFO thread reads 0, which
# is not cached).
_slack = threading.local()


_prctl = None  # libc's prctl, looked up at first use (False: none there)


def _libc_prctl():
    """libc's ``prctl`` (looked up once per process), or False where there is none."""
    global _prctl
    if _prctl is None:
        import ctypes
        try:
            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):  # not Linux
            _prctl = False
    return _prctl


def tighten_timer_slack() -> Optional[int]:
    """Give the calling thread the least timer slack (:data:`TIMER_SLACK_NS`) for a wait that
    should not sleep at all; return its previous slack for :func:`restore_timer_slack`, or
    None where nothing was changed: the slack is already that low (:func:`apply_rt` ran, or a
    SCHED_FIFO thread, whose slack newer kernels report as 0), or prctl is missing or fails.

    Why: rmw_fastrtps turns a zero-timeout wait on a wait set into a futex wait until "now",
    which the kernel lets end up to the thread's slack late (50 µs by default), so each of the
    PicasExecutor's zero-timeout polls sleeps that long in a thread without :func:`apply_rt`
    (:func:`_apply_timer_slack`). Never raises; costs nothing once a thread's slack was seen
    that low (it changes only by the thread's own prctl), else one prctl, three with the
    restore."""
    prctl = _libc_prctl()
    if not prctl or getattr(_slack, "tight", False):
        return None
    # (prctl's int return: a slack above INT_MAX, or -1 for an error, reads <= 1: left alone)
    previous = prctl(_PR_GET_TIMERSLACK, 0, 0, 0, 0)
    if previous <= TIMER_SLACK_NS:
        _slack.tight = previous == TIMER_SLACK_NS  # (0: SCHED_FIFO's, gone if it drops to OTHER)
        return None
    if prctl(_PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0) != 0:
        return None
    return previous


def restore_timer_slack(previous: Optional[int]) -> None:
    """Give the calling thread back the slack :func:`tighten_timer_slack` returned (nothing
    where it returned None)."""
    if previous is not None:
        _prctl(_PR_SET_TIMERSLACK, previous, 0, 0, 0)


def _apply_idle(report: RtReport, priority: int, *, fallback: bool) -> bool:
    """SCHED_IDLE for a best-effort thread; False (and a message) where it is refused."""
    report.fallback = fallback
    how = f"SCHED_IDLE (best-effort, from RT priority {priority})"
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError) as err:
        report.messages.append(f"{how} denied ({err}); trying the nice ladder")
        return False
    report.policy = "SCHED_IDLE"
    report.messages.append(f"{how} instead" if fallback else how)
    return True


def apply_rt(priority: int | None, cpu: int | None, *, mode: str = "auto",
             best_effort: bool = False,
             log: Optional[Callable[[str], None]] = None) -> RtReport:
    """Give the calling thread RT ``priority`` (SCHED_FIFO, else a nice value) and pin it to
    ``cpu``; never raises because the machine refused something.

    :param priority: SCHED_FIFO priority (1..99 on Linux), or ``None`` to leave the policy alone.
    :param cpu: CPU index to pin to, or ``None`` (or a negative value) to leave affinity alone.
    :param mode: ``auto`` (SCHED_FIFO, on refusal nice, on refusal nothing), ``fifo``, ``nice``
        or ``none`` (see the module docstring).
    :param best_effort: the thread serves only best-effort work: SCHED_IDLE where ``auto`` or
        ``nice`` would give a nice value (see the module docstring).
    :param log: receives the one line that says what was applied; ``None``: the ``paam.rt``
        logger (a warning when something asked for was not applied as asked, else info).
    :return: an :class:`RtReport`; ``report.policy``/``report.nice`` say what the thread got,
        ``report.ok`` is False when something was denied or replaced by the fallback, and
        ``str(report)`` says what and why.

    On Linux, pid 0 in sched_setscheduler/sched_setaffinity means the calling thread, so only the
    thread that will spin is affected.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if cpu is not None and cpu < 0:
        cpu = None
    report = RtReport(requested_priority=priority, requested_cpu=cpu, mode=mode,
                      best_effort=bool(best_effort))
    if cpu is not None:
        _apply_affinity(report, cpu)
    if priority is not None and mode != "none":
        fifo_refused = mode == "nice"
        if mode in ("auto", "fifo"):
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(priority)))
                report.priority_applied = True
                report.policy = "SCHED_FIFO"
                report.messages.append(f"SCHED_FIFO priority {priority}")
            except (OSError, AttributeError) as err:
                report.fifo_error = err if isinstance(err, OSError) else OSError(
                    errno.ENOSYS, "SCHED_FIFO not supported on this platform")
                fifo_refused = _refused(err)
                text = _explain_fifo_error(report.fifo_error, priority)
                if mode == "fifo" or not fifo_refused:
                    text += "; thread stays SCHED_OTHER"
                report.messages.append(text)
        if fifo_refused and mode in ("auto", "nice"):
            if not (best_effort and _apply_idle(report, priority, fallback=mode == "auto")):
                _apply_nice(report, priority, fallback=mode == "auto")
    if report.messages:
        line = f"real-time settings: {report}"
        if log is not None:
            log(line)
        else:
            _logger.log(logging.INFO if report.ok else logging.WARNING, line)
    return report


_MCL_CURRENT, _MCL_FUTURE = 1, 2        # mlockall(2)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # mallopt(3)
_CAP_IPC_LOCK = 14                       # capabilities(7)


def _may_lock_without_limit() -> bool:
    """Whether the process holds CAP_IPC_LOCK (root normally does), which lifts
    RLIMIT_MEMLOCK: bit 14 of CapEff in /proc/self/status."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> _CAP_IPC_LOCK & 1)
    except (OSError, ValueError):
        pass
    return False


def lock_memory() -> str:
    """Keep the calling process's memory resident, as real-time programs do after their setup;
    returns one line saying what was applied (never raises).

    * ``mallopt``: glibc keeps the heap memory it frees (no trimming) and serves large blocks
      from the heap instead of fresh ``mmap`` regions, so that steady-state allocations reuse
      pages the process already has.
    * Python's own allocator (pymalloc) unmaps an arena once it empties and maps a fresh one
      later, whatever the above: start the process with ``PYTHONMALLOC=malloc`` to route
      Python's small objects through malloc too (the line says whether it was).
    * ``mlockall(MCL_CURRENT | MCL_FUTURE)``: every page mapped now and later stays resident
      (and is faulted in when mapped, not when first touched). Attempted only where the process
      may lock without limit (CAP_IPC_LOCK, which root normally holds, or ``ulimit -l
      unlimited``): under a finite RLIMIT_MEMLOCK a locked process could not grow past it, and
      allocations would fail.

    Why: a page fault in a callback is time no analysis counts. Measured on the 2-core VM (case
    study 1, 2026-11-24): with PYTHONMALLOC=malloc the executors took about 730 instead of
    1 760 page faults in 90 s, and chain 1's tail did not change (its stalls there were the
    host pausing the whole guest). Call it after the imports and the
    nodes are set up: what is mapped then gets locked.
    """
    import ctypes
    import resource
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as err:
        return f"memory not locked ({err})"
    notes = []
    kept = hasattr(libc, "mallopt") and (libc.mallopt(_M_TRIM_THRESHOLD, -1) == 1
                                         and libc.mallopt(_M_MMAP_MAX, 0) == 1)
    notes.append("malloc keeps freed memory" if kept else "malloc settings not applied (not glibc)")
    if os.environ.get("PYTHONMALLOC", "").startswith("malloc"):
        notes.append("Python's objects through malloc (PYTHONMALLOC)")
    else:
        notes.append("Python's pymalloc arenas still come and go (start the process with "
                     "PYTHONMALLOC=malloc to keep them)")
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft != resource.RLIM_INFINITY and not _may_lock_without_limit():
        notes.insert(0, f"memory not locked: RLIMIT_MEMLOCK is {soft // 1024} kB (a locked "
                        "process could not grow past it); `ulimit -l unlimited` or "
                        "CAP_IPC_LOCK allows it")
    elif libc.mlockall(_MCL_CURRENT | _MCL_FUTURE) != 0:
        err = ctypes.get_errno()
        notes.insert(0, f"mlockall denied ({errno.errorcode.get(err, err)}: {os.strerror(err)})")
    else:
        notes.insert(0, "memory locked (mlockall, current and future)")
    return "; ".join(notes)


#: Fast DDS's sender threads (``dds.asyn.<participant>.<n>``): left at SCHED_OTHER by
#: :func:`dds_threads_rt`.
DDS_SENDER_PREFIX = "dds.asyn"


def _thread_ids() -> set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except (OSError, ValueError):
        return set()


#: How long :func:`dds_threads_rt` waits, at most, for threads started in its block to name
#: themselves: a thread is created under its creator's name and renames itself once it runs,
#: and Fast DDS's sender thread must not be raised before it has (seen on the 2-core VM in two
#: runs of three, 2026-11-23).
NAME_SETTLE_S = 0.2


def _settled_names(tids: list[int]) -> dict[int, str]:
    """The names of ``tids`` once every one is Fast DDS's (``dds.*``) or ``NAME_SETTLE_S`` has
    passed: rclpy's own threads keep their inherited name, so they cost the whole wait."""
    deadline = time.monotonic() + NAME_SETTLE_S
    while True:
        names = {tid: _thread_name(tid) for tid in tids}
        if all(n.startswith("dds.") for n in names.values()) or time.monotonic() >= deadline:
            return names
        time.sleep(0.01)


def _thread_name(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


@contextlib.contextmanager
def dds_threads_rt() -> Iterator[dict[str, list[str]]]:
    """Around ``rclpy.init`` and the first node (where Fast DDS starts its threads): every
    thread started in the block gets the calling thread's SCHED_FIFO/SCHED_RR priority, as it
    would by inheritance, except Fast DDS's sender threads (``dds.asyn*``), which stay at
    SCHED_OTHER.

    Why: Fast DDS's ``FlowControllerImpl::run`` (the sender thread) retries a writer's mutex
    with ``try_lock`` in a loop that neither blocks nor yields. At SCHED_FIFO, with the holder
    a thread of its own process at the same priority on the same core, the holder never runs
    again: a livelock that starves every thread at or below that priority on the core
    (eProsima/Fast-DDS#5272; it hung case study 1 on a 2-core VM). At SCHED_OTHER any RT holder preempts it. Messages do not
    wait for it: rmw_fastrtps publishes synchronously (Jazzy's default), so a message is written
    on the publishing thread; the sender thread only resends and serves discovery.

    How: the caller runs the block at SCHED_OTHER (so every thread started in it inherits
    SCHED_OTHER, and the sender thread never spins at RT priority); at its end the threads
    started in the block that are still SCHED_OTHER, but the sender threads, and the caller get
    the caller's policy and priority back. Threads that existed before the block, and new ones
    that set their own policy, are left alone. Where the caller is not SCHED_FIFO/SCHED_RR (ROS
    2's SCHED_OTHER, the nice fallback of a machine that denies SCHED_FIFO, SCHED_IDLE of a
    best-effort executor) the block runs as is, and its threads inherit the caller's policy and
    nice value. Threads are sorted by their names once they have set them (up to
    ``NAME_SETTLE_S`` after the block). Never raises. The dict yielded gets, at the block's
    end, the names of the threads raised (``"raised"``) and left at SCHED_OTHER (``"kept"``).
    """
    report: dict[str, list[str]] = {"raised": [], "kept": []}
    try:
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
        # (not with SCHED_RESET_ON_FORK set: then new threads start at SCHED_OTHER anyway)
        rt = policy in (os.SCHED_FIFO, os.SCHED_RR)
    except (OSError, AttributeError):
        rt = False
    before = _thread_ids() if rt else set()
    if rt:
        try:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            rt = False  # the caller stays RT, and its threads inherit that as without the block
    try:
        yield report
    finally:
        if rt:
            new = sorted(_thread_ids() - before)
            for tid, name in _settled_names(new).items():
                try:
                    if os.sched_getscheduler(tid) != os.SCHED_OTHER:
                        continue  # it set its own policy
                    if name.startswith(DDS_SENDER_PREFIX):
                        report["kept"].append(name)
                        continue
                    os.sched_setscheduler(tid, policy, param)
                    report["raised"].append(name)
                except OSError:
                    pass  # it ended, or the machine refused
            with contextlib.suppress(OSError):
                os.sched_setscheduler(0, policy, param)
