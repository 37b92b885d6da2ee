"""What the executor processes record and how a setup x method's records come together.

Each executor process (rclpy's, :mod:`.executor`, or the C++ E0, :mod:`.cpp`) writes one
:class:`ProcessRecord` (an ``.npz`` file); the parent reads them back and combines them into
one :class:`RunResult`, the per-run record the KPIs, the report and the figures read.
"""
from __future__ import annotations

import array
import dataclasses
from typing import Any

import numpy as np

from paam_experiments.case_study2 import graph
from paam_experiments.overhead import LOCAL_STAGES

# paamd's per-request timestamps (paam.Client.timestamps), in order: the ends of the stages
# the overhead experiment names
STAGES = (LOCAL_STAGES[0][1],) + tuple(end for _name, _start, end in LOCAL_STAGES)
STAGE_NAMES = tuple(f"{a}->{b}" for a, b in zip(STAGES, STAGES[1:]))
# one row per hot-path instance: end, latency, missing, 2 seqs, estimator start, lidar gap,
# timers' phase, later lidar's lateness, then the hops (graph.HOT_HOPS), then 1 where the
# front lidar's callback started later (0: the rear's)
HOT_COLS = 10 + len(graph.HOT_HOPS)
NO_STAMP = -(1 << 62)  # a hop the sample's history does not hold
# the hot path executor's callbacks are noted from this long before the recording starts: the
# first recorded instances' timers were due up to a period or two before it
CALLS_BEFORE_NS = 1_000_000_000
# one row per callback of the hot path's executor: start, end, priority, cpu and run-queue ns at
# start, at end, burn's CPU ns, --cpu-probe's C and Python probe ns (-1: not run)
CALL_COLS = 10
SCHED = slice(3, 8)   # the scheduler counters' and the burn's columns
PROBE = slice(8, 10)  # --cpu-probe's


class Rows:
    """Rows of ``width`` integers, kept in one flat ``array.array`` of int64. An appended row
    leaves no object behind, so the records add nothing for Python's collector to count or
    scan: a list of tuples (one per callback and per GPU request) makes the executor run full
    collections of tens of milliseconds inside the very instances measured."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._a = array.array("q")

    def append(self, row) -> None:
        if len(row) != self.width:
            raise ValueError(f"a row of {len(row)} values, not {self.width}")
        self._a.extend(row)

    def __len__(self) -> int:
        return len(self._a) // self.width

    def array(self) -> np.ndarray:
        return np.frombuffer(self._a, dtype=np.int64).reshape(-1, self.width).copy()


def _ints(shape: tuple[int, ...] = (0,)) -> np.ndarray:
    return np.zeros(shape, dtype=np.int64)


def _floats() -> np.ndarray:
    return np.zeros(0, dtype=np.float64)


@dataclasses.dataclass
class ProcessRecord:
    """What one executor process recorded (the same for the rclpy and the C++ executor)."""
    hot: np.ndarray            # hot-path instances, HOT_COLS columns
    bp_starts: np.ndarray      # behavior-planner timer callback starts (ns)
    published: np.ndarray      # lidar samples published while recording: front, rear
    excess: np.ndarray         # CPU ms beyond the burn per PAAM callback
    sub_drops: dict[str, int]  # missing samples per subscription, "Node<-topic"
    gpu_wall: np.ndarray       # wall ms of each recorded GPU segment
    gpu_stages: np.ndarray     # per PAAM GPU request: chain priority, then the STAGES stamps
    rt: list[str]              # "executor: OS priority, CPU" notes
    thread_cpus: dict[str, int]  # the process's threads by the cores they may run on, mid-run
    gc_ns: np.ndarray          # Python's collector's pauses (common.GcPauses)
    hot_calls: np.ndarray      # the hot path executor's callbacks, CALL_COLS columns
    switch_interval: float     # Python's switch interval (s)
    mt_calls: np.ndarray       # MT with one pool of threads: every callback (.threads)

    def save(self, path: str) -> None:
        drops = sorted(self.sub_drops)
        np.savez(path, hot=self.hot, bp_starts=self.bp_starts, published=self.published,
                 excess=self.excess, sub_drop_keys=np.asarray(drops, dtype=str),
                 sub_drop_counts=np.asarray([self.sub_drops[k] for k in drops], dtype=np.int64),
                 gpu_wall=self.gpu_wall, gpu_stages=self.gpu_stages,
                 rt=np.asarray(self.rt),
                 thread_cpu_keys=np.asarray(list(self.thread_cpus), dtype=str),
                 thread_cpu_counts=np.asarray(list(self.thread_cpus.values()), dtype=np.int64),
                 gc_ns=self.gc_ns, hot_calls=self.hot_calls,
                 switch_interval=np.float64(self.switch_interval), mt_calls=self.mt_calls)

    @classmethod
    def load(cls, path: str) -> ProcessRecord:
        with np.load(path) as z:
            return cls(
                hot=z["hot"], bp_starts=z["bp_starts"], published=z["published"],
                excess=z["excess"],
                sub_drops={k: int(n) for k, n in zip(z["sub_drop_keys"].tolist(),
                                                     z["sub_drop_counts"].tolist())},
                gpu_wall=z["gpu_wall"], gpu_stages=z["gpu_stages"],
                rt=[str(x) for x in z["rt"]],
                thread_cpus=dict(zip(z["thread_cpu_keys"].tolist(),
                                     map(int, z["thread_cpu_counts"].tolist()))),
                gc_ns=z["gc_ns"], hot_calls=z["hot_calls"],
                switch_interval=float(z["switch_interval"]), mt_calls=z["mt_calls"])


def rows_by_start(parts: list[np.ndarray], width: int) -> np.ndarray:
    """Callback records (rows of ``width``, the start first) of a run's processes as one
    array, by start."""
    a = np.vstack(parts) if parts else _ints((0, width))
    return a[np.argsort(a[:, 0], kind="stable")]


def hot_calls_by_start(parts: list[np.ndarray]) -> np.ndarray:
    """The hot path executor's callback records of a run's processes as one array, by start
    (records without the scheduler columns padded with -1: unknown)."""
    parts = [p if p.shape[1] == CALL_COLS else
             np.hstack([p, np.full((len(p), CALL_COLS - p.shape[1]), -1, dtype=np.int64)])
             for p in parts]
    return rows_by_start(parts, CALL_COLS)


@dataclasses.dataclass
class RunResult:
    """One setup x method: its hot-path instances (one element each, by end), the behavior
    planner's periods and the processes' other records. A run read back from its CSV files
    (``--replot``) has the instances' latency, drops and lateness only."""
    hot_end_ns: np.ndarray = dataclasses.field(default_factory=_ints)
    latency_ms: np.ndarray = dataclasses.field(default_factory=_floats)
    drops: np.ndarray = dataclasses.field(default_factory=_ints)
    latency_to_start_ms: np.ndarray = dataclasses.field(default_factory=_floats)
    lidar_gap_ms: np.ndarray = dataclasses.field(default_factory=_floats)
    lidar_phase_ms: np.ndarray = dataclasses.field(default_factory=_floats)
    # the later lidar callback's start after its timer's due time (NaN: not on record); None
    # where no run recorded it
    lidar_late_ms: np.ndarray | None = None
    hops_ms: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros((0, len(graph.HOT_HOPS))))
    # the KPI starts at the later lidar callback and so counts that lidar's transformer (the
    # rear's holds the TPU segment): which one it was, per instance
    later_front: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, dtype=bool))
    bp_period_ms: np.ndarray = dataclasses.field(default_factory=_floats)
    published: list[int] = dataclasses.field(default_factory=lambda: [0, 0])
    sub_drops: dict[str, int] = dataclasses.field(default_factory=dict)
    excess_ms: list[float] = dataclasses.field(default_factory=list)
    rt: list[str] = dataclasses.field(default_factory=list)
    t0_ns: int = 0
    # per process: how many of its threads may run on each set of cores, mid-run
    threads: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    # per process (E0, ... or E0+E1+E2+E3): its collector's pauses (common.GcPauses)
    gc_ns: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    gpu_segment_ms: list[float] = dataclasses.field(default_factory=list)
    # the hot path executor's callbacks (CALL_COLS columns), by start
    hot_executor_calls_ns: np.ndarray | None = None
    # MT with one pool of threads: every callback (threads.CALL_COLS), by start; None in the
    # other setups
    mt_calls_ns: np.ndarray | None = None
    # Python's switch interval in the executor processes (ms)
    switch_interval_ms: float = float("nan")
    # per PAAM GPU request: chain priority, then paamd's STAGES stamps (ns)
    gpu_stages_ns: np.ndarray = dataclasses.field(
        default_factory=lambda: _ints((0, 1 + len(STAGES))))
    # /proc/stat every second (common.host_series: interval ends, CPUs, busy and stolen ms)
    host: dict[str, Any] = dataclasses.field(default_factory=dict)

    def host_record(self) -> dict[str, Any]:
        """The host series with the run's start, as common's host_* functions read a run."""
        return {**self.host, "t0_ns": self.t0_ns}


def combine(records: list[tuple[str, ProcessRecord]], t0_ns: int,
            host: dict[str, Any]) -> RunResult:
    """One setup x method's result from its processes' records (``(name, record)``), the run
    starting at ``t0_ns`` (CLOCK_MONOTONIC), with the host's series of the run."""
    hot = [rec.hot for _n, rec in records]
    hot_a = np.vstack(hot) if hot else _ints((0, HOT_COLS))
    hot_a = hot_a[np.argsort(hot_a[:, 0])]
    bp = [rec.bp_starts for _n, rec in records if rec.bp_starts.size]
    starts = np.sort(np.concatenate(bp)) if bp else _ints()
    published = _ints((2,))
    sub_drops: dict[str, int] = {}
    for _n, rec in records:
        published += rec.published
        for k, n in rec.sub_drops.items():
            sub_drops[k] = sub_drops.get(k, 0) + int(n)
    mt_calls = [rec.mt_calls for _n, rec in records if len(rec.mt_calls)]
    stages = [rec.gpu_stages for _n, rec in records]
    switch_s = [rec.switch_interval for _n, rec in records]

    def stamped(col: np.ndarray) -> np.ndarray:
        return np.where(col == NO_STAMP, np.nan, col / 1e6)
    return RunResult(
        hot_end_ns=hot_a[:, 0], latency_ms=hot_a[:, 1] / 1e6, drops=hot_a[:, 2],
        latency_to_start_ms=hot_a[:, 5] / 1e6, lidar_gap_ms=hot_a[:, 6] / 1e6,
        lidar_phase_ms=stamped(hot_a[:, 7]), lidar_late_ms=stamped(hot_a[:, 8]),
        hops_ms=stamped(hot_a[:, 9:-1]), later_front=hot_a[:, -1].astype(bool),
        bp_period_ms=np.diff(starts) / 1e6, published=published.tolist(),
        sub_drops=dict(sorted(sub_drops.items(), key=lambda kv: (-kv[1], kv[0]))),
        excess_ms=[x for _n, rec in records for x in rec.excess.tolist()],
        rt=[x for _n, rec in records for x in rec.rt], t0_ns=t0_ns,
        threads={n: rec.thread_cpus for n, rec in records},
        gc_ns={n: rec.gc_ns for n, rec in records},
        gpu_segment_ms=[x for _n, rec in records for x in rec.gpu_wall.tolist()],
        hot_executor_calls_ns=hot_calls_by_start([rec.hot_calls for _n, rec in records]),
        mt_calls_ns=rows_by_start(mt_calls, mt_calls[0].shape[1]) if mt_calls else None,
        switch_interval_ms=max(switch_s) * 1e3 if switch_s else float("nan"),
        gpu_stages_ns=np.vstack(stages) if stages else _ints((0, 1 + len(STAGES))),
        host=host)


def due_ns(r: RunResult) -> np.ndarray | None:
    """Per hot-path instance, the later lidar timer's due time (ns; where its lateness is not
    on record, the later lidar callback's start), None without the lateness column."""
    if r.lidar_late_ms is None:
        return None
    return r.hot_end_ns - np.round(
        (r.latency_ms + np.nan_to_num(r.lidar_late_ms)) * 1e6).astype(np.int64)


def stage_durations(stages) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chain priorities, stage durations in ns: one column per STAGE_NAMES, submit stamps)
    of the recorded PAAM GPU requests (rows: chain priority, then the STAGES stamps) that have
    every stamp."""
    a = np.asarray(stages, dtype=np.int64).reshape(-1, 1 + len(STAGES))
    ok = (a[:, 1:] > 0).all(axis=1)
    return a[ok, 0], np.diff(a[ok, 1:], axis=1), a[ok, 1]
