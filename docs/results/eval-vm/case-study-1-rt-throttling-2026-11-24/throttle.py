"""Times the device core (CPU 1) went idle although one of paamd's SCHED_FIFO bucket workers
was runnable (switched out while still runnable, prev_state R, and not switched in since), from
a run's ftrace (sched_switch, hrtimer_expire_entry). Nothing but RT throttling idles a core with
a runnable SCHED_FIFO thread; such a window ends when sched_rt_period_timer replenishes the
budget. This kernel logs no switch out of idle on CPU 1, so a window is measured up to the next
event that CPU logs for a task (an upper bound). Also: how long fair-class threads ran while such
a worker waited (the fair server), by thread, from the switches out of them.

    python throttle.py RUN_DIR [SECONDS] [CPU]   # RUN_DIR holds trace.txt and t0_ns

Only [t0, t0 + SECONDS] counts (default 90: the measured run).
"""
import re
import sys
from collections import defaultdict

run_dir = sys.argv[1]
t0 = int(open(f"{run_dir}/t0_ns").read()) / 1e9
t_end = t0 + (float(sys.argv[2]) if len(sys.argv) > 2 else 90.0)
cpu = int(sys.argv[3]) if len(sys.argv) > 3 else 1
line_re = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$")
sw_re = re.compile(r"prev_comm=(.*) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S+) ==> "
                   r"next_comm=(.*) next_pid=(\d+) next_prio=(\d+)")

preempted: dict[int, str] = {}   # FIFO workers switched out while runnable, not back since
idle_at = None                   # the core went idle with such a worker waiting
timer_in_window = False
windows = []                     # (start, length upper bound, a period timer fired inside)
ahead = defaultdict(float)       # fair-class thread -> s it ran while a FIFO worker waited
ran_since = None                 # when the current fair-class thread was switched in

for line in open(f"{run_dir}/trace.txt", errors="replace"):
    m = line_re.match(line)
    if not m or int(m.group(3)) != cpu:
        continue
    t, pid, ev, rest = float(m.group(4)), int(m.group(2)), m.group(5), m.group(6)
    if idle_at is not None and pid != 0:  # the first sign of a task running again
        if t0 <= idle_at < t_end:
            windows.append((idle_at, t - idle_at, timer_in_window))
        idle_at = None
    preempted.pop(pid, None)  # a task that logs an event is running
    if ev == "hrtimer_expire_entry" and "sched_rt_period_timer" in rest:
        timer_in_window = idle_at is not None
    if ev != "sched_switch":
        continue
    s = sw_re.search(rest)
    if not s:
        continue
    prev_comm, prev_pid, prev_prio = s.group(1), int(s.group(2)), int(s.group(3))
    if ran_since is not None and prev_prio >= 100 and preempted and t0 <= t < t_end:
        ahead[prev_comm] += t - ran_since
    ran_since = None
    if prev_comm.startswith("paamd-w") and prev_prio < 100 and s.group(4).startswith("R"):
        preempted[prev_pid] = prev_comm
    next_pid, next_prio = int(s.group(6)), int(s.group(7))
    preempted.pop(next_pid, None)
    if next_pid == 0:
        if preempted:
            idle_at, timer_in_window = t, False
    elif next_prio >= 100:
        ran_since = t

print(f"{run_dir}: {t_end - t0:.0f} s from t0, CPU {cpu}")
ms = sorted((w[1] * 1e3 for w in windows), reverse=True)
print(f"  went idle with a SCHED_FIFO worker runnable: {len(windows)} times, {sum(ms):.1f} ms in all "
      f"(upper bound), longest {', '.join(f'{x:.2f}' for x in ms[:5])} ms; "
      f"a sched_rt_period_timer fired inside {sum(1 for w in windows if w[2])} of them")
print("  fair-class threads that ran while a SCHED_FIFO worker waited (ms in all):")
for comm, secs in sorted(ahead.items(), key=lambda kv: -kv[1]):
    if secs >= 0.0005:
        print(f"    {comm:<18} {secs * 1e3:8.1f}")
