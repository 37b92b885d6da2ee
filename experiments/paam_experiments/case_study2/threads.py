"""Case study 2's MT runs with one pool of threads: where each hot-path instance's time went.

In the shared MT PicasExecutor (``--mt-executor shared``) and ROS 2's MultiThreadedExecutor any
of the four threads runs any callback, so the hot path's executor has no thread of its own to
follow (:func:`.e0.executor_breakdown` follows E0's thread in 4ST and partitioned MT). Here
every callback is on record instead (:data:`CALL_COLS`), with the thread that ran it and that
thread's scheduler counters, and each instance's time from the later lidar timer's due time to
the estimator's end is split by what the threads were doing:

* ``hot_ms``: at least one hot-path callback running (on any thread);
* ``held_ms``: none, and a lower-priority callback of a hot-path node running: the
  intersection node's cluster-settings connection. In the node's one mutually exclusive
  callback group (the reference system's) it holds the node's hot-path connection out; with a
  group per connection (``--intersection-groups connection``) it merely runs then;
* ``blocked_ms``: neither, and every thread inside a lower-priority callback: ready hot work,
  if any, had no thread (the executor does not preempt);
* ``idle_ms``: none of these, and a thread out of callbacks: the hot path's next message on
  its way (rclpy's publish, DDS, the wait set) or the executor picking it.

The four add up to the instance's time from the due time. Then, summed over the hot-path
callbacks in the instance (the two lidar branches may overlap), the parts of their wall time:
in accelerator requests (not waiting for a CPU there: the device, paamd, the wake-up), the
number cruncher's burn, their other CPU time (Python's and rclpy's), runnable but waiting for a
CPU (in requests too), and the rest, off a CPU and not waiting for one (the GIL or another lock,
or time the host took); and, before each hot-path callback that starts inside the instance, the
gap on its own thread since that thread's previous callback: its CPU time (the executor's own
work) and its wait for a CPU.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from paam_experiments import common
from paam_experiments.case_study2.records import RunResult, rows_by_start

# one row per callback: start and end (ns, monotonic), node (graph.NODE_IDS), chain
# priority, the thread's CPU and run-queue ns at the start and at the end (-1: no schedstat),
# ns of CPU in the number cruncher's burn, ns of wall time, of CPU time and of waiting for a CPU
# in accelerator requests, the thread's index
CALL_COLS = 13
(START, END, NODE, PRIO, CPU0, RUNQ0, CPU1, RUNQ1, BURN, SEG_WALL, SEG_CPU, SEG_RUNQ,
 THREAD) = range(CALL_COLS)

# per instance (ms, except hot_calls)
COLS = ("hot_ms", "held_ms", "blocked_ms", "idle_ms", "hot_calls", "hot_seg_ms", "hot_burn_ms",
        "hot_other_cpu_ms", "hot_runq_ms", "hot_off_ms", "pick_cpu_ms", "pick_runq_ms")
# the split of the time from the due time (idle_ms last: the rest)
TIME_SPLIT = ("hot_ms", "held_ms", "blocked_ms", "idle_ms")


def by_start(parts: list[np.ndarray]) -> np.ndarray:
    """The records of a run's processes as one array, by start."""
    return rows_by_start(parts, CALL_COLS)


def _previous_on_thread(calls: np.ndarray) -> np.ndarray:
    """Per call (sorted by start), the index of the same thread's previous call, -1 for none."""
    prev = np.full(len(calls), -1, dtype=np.int64)
    for t in np.unique(calls[:, THREAD]):
        idx = np.flatnonzero(calls[:, THREAD] == t)
        prev[idx[1:]] = idx[:-1]
    return prev


def _occupancy(s: np.ndarray, e: np.ndarray, hot: np.ndarray, holds: np.ndarray,
               threads: int) -> tuple[float, float, float]:
    """ms of [min(s), max(e)] with a hot call running; with none and a holding one (a lower
    call of a hot node) running; with neither and every thread in a lower call. s and e are
    clipped to the instance already."""
    t = np.concatenate([s, e])
    h, k = hot.astype(np.int64), holds.astype(np.int64)
    d_hot, d_low = np.concatenate([h, -h]), np.concatenate([1 - h, h - 1])
    d_hold = np.concatenate([k, -k])
    # ends before starts at one instant: a thread that ends a call and starts the next at the
    # same ns was not busy twice
    order = np.lexsort((np.concatenate([np.ones(len(s)), np.zeros(len(e))]), t))
    t = t[order]
    n_hot, n_low, n_hold = (np.cumsum(d[order])[:-1] for d in (d_hot, d_low, d_hold))
    span = np.diff(t)
    no_hot = n_hot == 0
    return (span[~no_hot].sum() / 1e6, span[no_hot & (n_hold > 0)].sum() / 1e6,
            span[no_hot & (n_hold == 0) & (n_low >= threads)].sum() / 1e6)


def thread_breakdown(r: RunResult, due: np.ndarray | None, hot_priority: int,
                     hot_nodes: Iterable[int]) -> dict[str, np.ndarray] | None:
    """Per hot-path instance, :data:`COLS` (see the module's text) from ``r.mt_calls_ns``
    over [``due``, its end] (ns; :func:`.kpis.due_ns`), the callbacks at ``hot_priority`` or
    above being the hot path's and ``hot_nodes`` its nodes (ids). NaN for instances the record
    does not cover or without a due time, and the counters' columns NaN without schedstat.
    None where there is no record (other setups, awaited segments)."""
    calls = r.mt_calls_ns
    if calls is None or not len(calls) or due is None:
        return None
    ends, late = r.hot_end_ns, r.lidar_late_ms
    starts, stops = calls[:, START], calls[:, END]
    hot = calls[:, PRIO] >= hot_priority
    holds = ~hot & np.isin(calls[:, NODE], list(hot_nodes))
    threads = len(np.unique(calls[:, THREAD]))
    longest = int((stops - starts).max())
    prev = _previous_on_thread(calls)
    sched_ok = (calls[:, CPU0:RUNQ1 + 1] >= 0).all(axis=1)
    out = {k: np.full(len(ends), np.nan) for k in COLS}
    for i in np.flatnonzero(~np.isnan(late)):
        a, b = due[i], ends[i]
        if a < starts[0]:
            continue  # the record does not reach back to this instance's due time
        lo = np.searchsorted(starts, a - longest, "left")
        hi = np.searchsorted(starts, b, "left")
        j = lo + np.flatnonzero(stops[lo:hi] > a)
        s, e = np.maximum(starts[j], a), np.minimum(stops[j], b)
        h = hot[j]
        split = _occupancy(s, e, h, holds[j], threads) if len(j) else (0.0, 0.0, 0.0)
        for k, v in zip(TIME_SPLIT[:-1], split):
            out[k][i] = v
        out["idle_ms"][i] = (b - a) / 1e6 - sum(split)
        hj = j[h]
        out["hot_calls"][i] = len(hj)
        if not len(hj):
            continue
        c = calls[hj]
        dur = np.maximum(c[:, END] - c[:, START], 1)
        w = (e[h] - s[h]) / dur  # the share of each hot call inside the instance
        out["hot_burn_ms"][i] = (c[:, BURN] * w).sum() / 1e6
        if sched_ok[hj].all():
            # a call's wall time = in requests not waiting for a CPU + burn + other CPU +
            # waiting for a CPU (in requests too) + off a CPU outside requests
            seg = c[:, SEG_WALL] - c[:, SEG_RUNQ]
            cpu, runq = c[:, CPU1] - c[:, CPU0], c[:, RUNQ1] - c[:, RUNQ0]
            out["hot_seg_ms"][i] = (seg * w).sum() / 1e6
            out["hot_other_cpu_ms"][i] = ((cpu - c[:, BURN] - c[:, SEG_CPU]) * w).sum() / 1e6
            out["hot_runq_ms"][i] = (runq * w).sum() / 1e6
            off = dur - seg - (cpu - c[:, SEG_CPU]) - runq
            out["hot_off_ms"][i] = (np.maximum(off, 0) * w).sum() / 1e6
            # the gaps before the hot calls that start inside the instance
            k = hj[(c[:, START] > a) & (prev[hj] >= 0)]
            p = prev[k]
            if not len(k):
                out["pick_cpu_ms"][i] = out["pick_runq_ms"][i] = 0.0
            elif sched_ok[p].all():
                out["pick_cpu_ms"][i] = (calls[k, CPU0] - calls[p, CPU1]).sum() / 1e6
                out["pick_runq_ms"][i] = (calls[k, RUNQ0] - calls[p, RUNQ1]).sum() / 1e6
    return out


def thread_summary(bd: dict | None, from_due_ms: np.ndarray) -> dict[str, Any] | None:
    """:func:`thread_breakdown` summarized: each column over the instances on record, the means
    over all of them and over the slowest 1% (by the time from the due time,
    ``from_due_ms`` per instance, NaN where unknown), and the slowest instance's."""
    if bd is None:
        return None
    ok = ~np.isnan(bd["hot_ms"]) & ~np.isnan(from_due_ms)
    if not ok.any():
        return None
    x = from_due_ms[ok]
    top = ok & (from_due_ms >= np.quantile(x, 0.99))
    worst = int(np.flatnonzero(ok)[np.argmax(x)])

    def means(sel: np.ndarray) -> dict[str, float]:
        return {"instances": int(sel.sum()), "from_due_ms": float(from_due_ms[sel].mean()),
                **{k: float(np.nanmean(bd[k][sel])) if (~np.isnan(bd[k][sel])).any()
                   else float("nan") for k in COLS}}

    return {"instances": int(ok.sum()), **{k: common.summarize(bd[k][ok]) for k in COLS},
            "mean_all": means(ok), "mean_slowest_1pct": means(top),
            "slowest": {"from_due_ms": float(from_due_ms[worst]),
                        **{k: float(bd[k][worst]) for k in COLS}}}


def node_overlaps(calls: np.ndarray, names: Sequence[str]) -> dict[str, float]:
    """ms for which two callbacks of one node ran at the same time, per node where any did
    (``names``: by node id). A node's callbacks in one mutually exclusive group never do."""
    out = {}
    for n in np.unique(calls[:, NODE]):
        c = calls[calls[:, NODE] == n]  # (by start)
        reach = np.maximum.accumulate(c[:, END])  # the latest end so far
        over = np.clip(np.minimum(reach[:-1], c[1:, END]) - c[1:, START], 0, None).sum()
        if over > 0:
            out[names[int(n)]] = float(over / 1e6)
    return out


def thread_line(b: dict) -> str:
    """summary.txt's line for :func:`thread_summary`: means over all instances -> over the
    slowest 1%."""
    a, t = b["mean_all"], b["mean_slowest_1pct"]

    def pair(k: str) -> str:
        return f"{common.fmt(a[k])} -> {common.fmt(t[k])}"

    return (f"from due {pair('from_due_ms')} ({t['instances']} slowest) = hot running "
            f"{pair('hot_ms')} + a hot node's lower callback {pair('held_ms')} + all "
            f"threads in lower callbacks {pair('blocked_ms')} + a thread "
            f"free, no hot running {pair('idle_ms')}; inside hot callbacks: requests "
            f"{pair('hot_seg_ms')}, burn {pair('hot_burn_ms')}, other CPU "
            f"{pair('hot_other_cpu_ms')}, waiting for a CPU {pair('hot_runq_ms')}, off CPU "
            f"{pair('hot_off_ms')}; before them on their threads: CPU {pair('pick_cpu_ms')}, "
            f"waiting for a CPU {pair('pick_runq_ms')}")
