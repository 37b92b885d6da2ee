"""Facts about the machine a run happens on, written into every result file: CPU, GPUs, kernel,
the kernel's real-time throttling, and what the CPU backend's device core is asked for."""
from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence


def gpu_label(names: Sequence[str]) -> str:
    """One line for the host's GPUs: "NVIDIA H100", "2 x NVIDIA H200", "A, B"."""
    if not names:
        return "unknown"
    if len(set(names)) == 1:
        return names[0] if len(names) == 1 else f"{len(names)} x {names[0]}"
    return ", ".join(names)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (else what platform knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def rt_throttling(proc: Path = Path("/proc/sys/kernel")) -> tuple[int, int] | None:
    """The kernel's RT throttling (sched_rt_runtime_us, sched_rt_period_us); runtime -1 = off.
    None where it cannot be read."""
    try:
        return (int((proc / "sched_rt_runtime_us").read_text()),
                int((proc / "sched_rt_period_us").read_text()))
    except (OSError, ValueError):
        return None


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


def machine_line(meta: dict[str, Any]) -> str:
    """:func:`machine_meta` as one line for a summary."""
    gpu = f", GPU {meta['gpu']}" if meta.get("gpu") else ""
    rt = ""
    if "sched_rt_runtime_us" in meta:
        runtime = meta["sched_rt_runtime_us"]
        rt = (", RT throttling off" if runtime < 0 else
              f", RT throttling {runtime} of {meta['sched_rt_period_us']} us")
    return (f"{meta['cpu']}, {meta['nproc']} CPUs{gpu}, Linux {meta['kernel']}{rt}, "
            f"{meta['backend']} backend, {meta['date']}")


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
                     "all busy the kernel throttles them")
        parts.append(text)
    return "; ".join(parts)


def ros_missing() -> str | None:
    """Why ROS 2 cannot run the case studies' executors here, or None where it can."""
    from paam.ros import ROS_MISSING_HINT, ros_available
    if not ros_available():
        return ROS_MISSING_HINT
    try:
        import std_msgs.msg  # noqa: F401
    except ImportError:
        return "std_msgs is missing (scripts/requirements-ros.txt)"
    return None
