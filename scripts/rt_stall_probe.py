#!/usr/bin/env python3
"""Does this kernel stall SCHED_FIFO threads when their core is nearly saturated?

The analysis behind paam's bounds assumes fixed-priority preemptive scheduling: an executor at
SCHED_FIFO runs whenever it has work. Linux breaks that when the real-time load of a core comes
close to 100%: RT throttling (kernel.sched_rt_runtime_us, 950 000 of every 1 000 000 µs by
default) and, since 6.12, the fair server (a deadline server that gives starved SCHED_OTHER /
SCHED_IDLE threads 50 ms of every second, ahead of every SCHED_FIFO thread) stop the RT threads
for up to ≈ 50 ms at once; docs/analysis.md says what the bounds need from the OS.

This probe pins itself to one core, starts a SCHED_OTHER busy loop there (a starved fair-class
thread, like a backlogged best-effort executor or any daemon), and then runs a SCHED_FIFO thread
with busy phases and short sleeps at several duty cycles, reporting how long each busy phase
lost (wall time minus the thread's CPU time). Needs permission for SCHED_FIFO (root or an
rtprio limit); nothing is changed on the machine.

    sudo python3 scripts/rt_stall_probe.py            # core 0, 4 s per duty cycle
    sudo python3 scripts/rt_stall_probe.py --cpu 3 --seconds 10
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

DUTY = ((5, 5), (8, 2), (9, 1), (20, 1))  # busy ms, sleep ms: 50%, 80%, 90%, 95%


def phases(busy_ms: float, sleep_ms: float, seconds: float) -> list[float]:
    """ms lost by each busy phase of ``busy_ms`` CPU time, for ``seconds``."""
    lost = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0, c0 = time.monotonic_ns(), time.thread_time_ns()
        while time.thread_time_ns() - c0 < busy_ms * 1e6:
            pass
        lost.append((time.monotonic_ns() - t0) / 1e6 - busy_ms)
        time.sleep(sleep_ms / 1e3)
    return lost


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpu", type=int, default=0, help="core to probe (default 0)")
    p.add_argument("--priority", type=int, default=90, help="SCHED_FIFO priority (default 90)")
    p.add_argument("--seconds", type=float, default=4.0, help="per duty cycle (default 4)")
    args = p.parse_args()
    if args.seconds <= 0 or not 1 <= args.priority <= 99:
        p.error("--seconds must be above 0 and --priority within 1..99")
    if args.cpu not in os.sched_getaffinity(0):
        print(f"rt_stall_probe: CPU {args.cpu} is not available to this process", file=sys.stderr)
        return 2
    os.sched_setaffinity(0, {args.cpu})
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.priority))
    except OSError as err:
        print(f"rt_stall_probe: SCHED_FIFO refused ({err}); run as root or with an rtprio limit",
              file=sys.stderr)
        return 2
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    try:
        runtime = open("/proc/sys/kernel/sched_rt_runtime_us").read().strip()
    except OSError:
        runtime = "?"
    print(f"kernel {os.uname().release}, sched_rt_runtime_us {runtime}; CPU {args.cpu}, "
          f"SCHED_FIFO {args.priority} beside a SCHED_OTHER busy loop")
    hog = subprocess.Popen([sys.executable, "-c",
                            f"import os; os.sched_setaffinity(0, {{{args.cpu}}})\n"
                            "while True: pass"])
    try:
        time.sleep(0.2)
        for busy, sleep in DUTY:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.priority))
            lost = sorted(phases(busy, sleep, args.seconds))
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            print(f"  RT load {100 * busy / (busy + sleep):3.0f}% ({busy} ms busy, {sleep} ms "
                  f"asleep): {len(lost)} phases, lost max {lost[-1]:6.2f} ms, "
                  f"{sum(x > 1 for x in lost)} over 1 ms, {sum(lost):6.1f} ms in all", flush=True)
    finally:
        hog.kill()
    print("A phase that lost tens of ms at a high RT load (≈ 50 ms near 95%) is the kernel handing "
          "the CPU to fair-class threads: keep executor cores' RT load well below that.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
