"""Real-time knobs for the calling thread: SCHED_FIFO priority and CPU affinity.

Both are applied when the machine permits them and reported clearly when it does not; nothing
here raises because a knob was denied (DESIGN.md: "nothing fails because a machine denies
them"). No ROS dependency: the bridge and the executor both use it.
"""
from __future__ import annotations

import dataclasses
import errno
import os


@dataclasses.dataclass
class RtReport:
    """What :func:`apply_rt` asked for and what the calling thread got."""

    requested_priority: int | None
    requested_cpu: int | None
    priority_applied: bool = False
    cpu_applied: bool = False
    messages: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when everything that was requested was applied."""
        return ((self.requested_priority is None or self.priority_applied)
                and (self.requested_cpu is None or self.cpu_applied))

    def __str__(self) -> str:
        return "; ".join(self.messages) if self.messages else "no real-time settings requested"


def _explain_priority_error(err: OSError, priority: int) -> str:
    if err.errno == errno.EPERM:
        return (f"SCHED_FIFO priority {priority} denied (EPERM): needs CAP_SYS_NICE or an "
                f"rtprio limit >= {priority} (ulimit -r, /etc/security/limits.conf); "
                "thread stays SCHED_OTHER")
    if err.errno == errno.EINVAL:
        lo = os.sched_get_priority_min(os.SCHED_FIFO)
        hi = os.sched_get_priority_max(os.SCHED_FIFO)
        return (f"SCHED_FIFO priority {priority} invalid (EINVAL): valid range is {lo}..{hi}; "
                "thread stays SCHED_OTHER")
    return f"SCHED_FIFO priority {priority} not applied ({err}); thread stays SCHED_OTHER"


def apply_rt(priority: int | None, cpu: int | None) -> RtReport:
    """Give the calling thread SCHED_FIFO ``priority`` and pin it to ``cpu``.

    :param priority: SCHED_FIFO priority (1..99 on Linux), or ``None`` to leave the policy alone.
    :param cpu: CPU index to pin to, or ``None`` (or a negative value) to leave affinity alone.
    :return: an :class:`RtReport`; ``report.ok`` is False when something was denied, and
        ``str(report)`` says what and why.

    On Linux, pid 0 in sched_setscheduler/sched_setaffinity means the calling thread, so only the
    thread that will spin is affected.
    """
    if cpu is not None and cpu < 0:
        cpu = None
    report = RtReport(requested_priority=priority, requested_cpu=cpu)
    if cpu is not None:
        if not hasattr(os, "sched_setaffinity"):
            report.messages.append(f"CPU affinity not supported on this platform; cpu {cpu} "
                                   "not applied")
        else:
            allowed = sorted(os.sched_getaffinity(0))
            try:
                os.sched_setaffinity(0, {cpu})
                report.cpu_applied = True
                report.messages.append(f"pinned to CPU {cpu}")
            except OSError as err:
                report.messages.append(
                    f"CPU {cpu} not applied ({os.strerror(err.errno or 0) or err}); "
                    f"thread may run on CPUs {allowed}")
    if priority is not None:
        if not hasattr(os, "sched_setscheduler"):
            report.messages.append(f"SCHED_FIFO not supported on this platform; priority "
                                   f"{priority} not applied")
        else:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
                report.priority_applied = True
                report.messages.append(f"SCHED_FIFO priority {priority}")
            except OSError as err:
                report.messages.append(_explain_priority_error(err, priority))
    return report
