"""The hot path's executor E0, instance by instance: where each hot-path instance's time from
the lidar timers' due time went on E0's one thread (4ST and the partitioned MT), from the
record of E0's callbacks (:data:`.records.CALL_COLS`), and its summaries for summary.json and
summary.txt.
"""
from __future__ import annotations

import numpy as np

from paam_experiments import common
from paam_experiments.case_study2 import graph
from paam_experiments.case_study2.records import PROBE, SCHED, RunResult, due_ns

# per instance (ms, except the counts)
E0_COLS = ("hot_ms", "lower_ms", "outside_ms", "lower_started", "callbacks", "outside_cpu_ms",
           "outside_runq_ms", "outside_rest_ms", "inside_runq_ms", "longest_gap_cpu_ms",
           "inside_beyond_burn_ms", "probe_c_us", "probe_py_us")
E0_SPLIT = ("outside_cpu_ms", "outside_runq_ms", "outside_rest_ms", "inside_runq_ms")
E0_SPLIT_MORE = ("callbacks", "longest_gap_cpu_ms", "inside_beyond_burn_ms")


def executor_breakdown(r: RunResult) -> dict[str, np.ndarray] | None:
    """Where each hot-path instance's time from the lidar timers' due time went on the hot
    path's executor (E0), from its callbacks' records: busy in hot-path callbacks (this
    instance's or an earlier one's), busy in lower-priority callbacks (the analysis' blocking),
    outside any callback (the executor's own work, waits for messages), all in ms, and how many
    lower-priority callbacks started after the due time, and how many callbacks ran in it.
    Where the thread's scheduler counters were recorded, the time outside callbacks splits into
    E0's own CPU time (the executor, Python), time runnable but waiting for its CPU (another
    thread had it), and the rest (asleep: waiting for a message or timer; or taken by the host,
    which the guest's counters do not see), with the CPU time of the one gap between callbacks
    that had the most; the run-queue wait inside callbacks; and the CPU time inside callbacks
    beyond the number cruncher's burn (Python's and rclpy's work there, a fixed amount: where it
    grows with the time outside callbacks, the CPU itself ran slower). The gaps and callbacks at
    the instance's edges count in proportion to their overlap with it. None where not recorded
    (awaited segments, a pool of threads: ROS 2's MT and the shared MT executor)."""
    calls = r.hot_executor_calls_ns
    due = due_ns(r)
    if calls is None or not len(calls) or due is None:
        return None
    ends, lat, late = r.hot_end_ns, r.latency_ms, r.lidar_late_ms
    starts, stops = calls[:, 0], calls[:, 1]
    hot = calls[:, 2] >= graph.HOT_PRIORITY
    sched_ok = calls.shape[1] >= SCHED.stop and bool((calls[:, SCHED] >= 0).any())
    probed = calls.shape[1] >= PROBE.stop and bool((calls[:, PROBE] >= 0).any())
    out = {k: np.full(len(lat), np.nan) for k in E0_COLS}
    for i in np.flatnonzero(~np.isnan(late)):
        a, b = due[i], ends[i]
        # (a callback may end a little after the instance's end stamp: the estimator's own)
        lo, hi = np.searchsorted(stops, a, "right"), np.searchsorted(starts, b, "left")
        if lo >= hi or a < starts[0]:
            continue  # the record does not reach back to this instance's due time
        busy = (np.minimum(stops[lo:hi], b) - np.maximum(starts[lo:hi], a)) / 1e6
        h = hot[lo:hi]
        out["hot_ms"][i], out["lower_ms"][i] = busy[h].sum(), busy[~h].sum()
        out["outside_ms"][i] = (b - a) / 1e6 - busy.sum()
        out["lower_started"][i] = int(((starts[lo:hi] > a) & ~h).sum())
        out["callbacks"][i] = hi - lo
        if sched_ok:
            _split_by_scheduler(out, i, calls, a, b, lo, hi)
        if probed:  # the median over the instance's callbacks: a rare preempted probe is ignored
            pr = calls[lo:hi, PROBE]
            pr = pr[(pr >= 0).all(axis=1)]
            if len(pr):
                out["probe_c_us"][i], out["probe_py_us"][i] = np.median(pr, axis=0) / 1e3
    return out


def _split_by_scheduler(out: dict, i: int, calls: np.ndarray, a: int, b: int, lo: int,
                        hi: int) -> None:
    """Instance i's time outside E0's callbacks by E0's scheduler counters (executor_breakdown):
    over the gaps between calls lo-1 .. hi (each weighted by its overlap with [a, b]), and the
    run-queue wait inside calls lo .. hi-1."""
    starts, stops = calls[:, 0], calls[:, 1]
    c = calls[max(lo - 1, 0):min(hi + 1, len(calls))]
    if (c[:, SCHED] < 0).any():
        return
    # gap k: from call k's end to call k+1's start
    g0, g1 = c[:-1, 1], c[1:, 0]
    span = np.maximum(g1 - g0, 1)
    w = np.clip(np.minimum(g1, b) - np.maximum(g0, a), 0, None) / span
    cpu = (c[1:, 3] - c[:-1, 5]) * w
    runq = (c[1:, 4] - c[:-1, 6]) * w
    out["outside_cpu_ms"][i] = cpu.sum() / 1e6
    out["longest_gap_cpu_ms"][i] = cpu.max() / 1e6 if len(cpu) else 0.0
    out["outside_runq_ms"][i] = runq.sum() / 1e6
    out["outside_rest_ms"][i] = max(out["outside_ms"][i] - (cpu.sum() + runq.sum()) / 1e6, 0.0)
    inside = calls[lo:hi]
    wi = (np.minimum(stops[lo:hi], b) - np.maximum(starts[lo:hi], a)) / np.maximum(
        stops[lo:hi] - starts[lo:hi], 1)
    out["inside_runq_ms"][i] = float(((inside[:, 6] - inside[:, 4]) * wi).sum() / 1e6)
    out["inside_beyond_burn_ms"][i] = float(
        ((inside[:, 5] - inside[:, 3] - inside[:, 7]) * wi).sum() / 1e6)


def breakdown_summary(bd: dict | None) -> dict | None:
    """The hot path executor's time per instance (summaries) and the slowest instance's."""
    if bd is None:
        return None
    ok = ~np.isnan(bd["hot_ms"])
    if not ok.any():
        return None
    worst = int(np.nanargmax(bd["hot_ms"] + bd["lower_ms"] + bd["outside_ms"]))
    started = bd["lower_started"][ok].astype(int)
    out = {"instances": int(ok.sum()),
           **{k: common.summarize(bd[k][ok]) for k in ("hot_ms", "lower_ms", "outside_ms")},
           "lower_started_histogram": {str(k): int(v) for k, v in
                                       zip(*np.unique(started, return_counts=True))},
           "slowest": {k: float(bd[k][worst]) for k in bd}}
    split = ok & ~np.isnan(bd["outside_cpu_ms"])
    if split.any():
        # where E0's time outside callbacks went, over all instances and over the 1% with the
        # most of it (means)
        top = split & (bd["outside_ms"] >= np.quantile(bd["outside_ms"][split], 0.99))
        keys = E0_SPLIT + E0_SPLIT_MORE
        out["outside_split"] = {
            "instances": int(split.sum()),
            **{k: common.summarize(bd[k][split]) for k in keys},
            "most_outside_1pct": {"instances": int(top.sum()),
                                  **{k: float(bd[k][top].mean()) for k in
                                     ("outside_ms",) + keys}}}
        probe = split & ~np.isnan(bd["probe_c_us"])
        if probe.sum() > 2:
            out["cpu_probe"] = _probe_summary(bd, probe, top & probe)
    return out


def _probe_summary(bd: dict, ok: np.ndarray, top: np.ndarray) -> dict:
    """--cpu-probe per instance (the median of its callbacks' probes, µs): over all instances,
    over the 1% with the most time outside callbacks, and each probe's correlation with E0's
    own CPU time outside callbacks and inside them beyond the burn. The same fixed work taking
    longer where E0's own CPU time grew says the CPU ran slower then."""
    out: dict = {"instances": int(ok.sum())}
    for k in ("probe_c_us", "probe_py_us"):
        x = bd[k][ok]
        out[k] = {**common.summarize(x),
                  "most_outside_1pct_mean": float(bd[k][top].mean()) if top.any() else float("nan"),
                  "r_outside_cpu": common.correlation(x, bd["outside_cpu_ms"][ok]),
                  "r_inside_beyond_burn": common.correlation(x, bd["inside_beyond_burn_ms"][ok])}
    return out
