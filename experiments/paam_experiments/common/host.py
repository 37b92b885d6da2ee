"""What the host took from the (virtual) CPUs while a run ran: /proc/stat sampled each second,
the steal around each measured instance, and the summaries and rows written from it.

A run's samples are a :class:`HostSeries`; the functions that read them also take a mapping
with its ``host_*`` keys (:meth:`HostSeries.as_keys`), the form a run's result dict holds.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from paam_experiments.common.report import fmt
from paam_experiments.common.stats import correlation, summarize

#: A second in which the host took at most this from all CPUs together (ms) counts as quiet.
QUIET_STEAL_MS = 50.0
#: A vCPU busy at least this share of the time (ms per s) counts as one the guest used.
ACTIVE_BUSY_MS_PER_S = 50.0


def parse_proc_stat(text: str) -> dict[int, tuple[int, int]]:
    """Per CPU of a /proc/stat text: (busy, steal) in USER_HZ ticks since boot. Busy is user +
    nice + system + irq + softirq; steal is the time the hypervisor ran something else while the
    virtual CPU wanted to run (0 on bare metal)."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 9 or not f[0].startswith("cpu") or f[0] == "cpu":
            continue
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in f[1:9])
        out[int(f[0][3:])] = (user + nice + system + irq + softirq, steal)
    return out


def proc_stat_deltas(times: Sequence[int], stats: Sequence[dict[int, tuple[int, int]]],
                     ms_per_tick: float) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray]:
    """Consecutive :func:`parse_proc_stat` samples taken at ``times`` as (interval ends [n],
    the CPUs, busy ms [n, cpus], steal ms [n, cpus]); CPUs that came or went are left out."""
    if len(stats) < 2:
        return np.zeros(0, np.int64), [], np.zeros((0, 0)), np.zeros((0, 0))
    cpus = sorted(set.intersection(*(set(s) for s in stats)))
    a = np.array([[s[c] for c in cpus] for s in stats], dtype=np.float64)
    d = np.diff(a, axis=0) * ms_per_tick
    return np.asarray(times, dtype=np.int64)[1:], cpus, d[:, :, 0], d[:, :, 1]


@dataclasses.dataclass
class HostSeries:
    """A run's /proc/stat samples: interval ends (CLOCK_MONOTONIC ns, the clock of the runs'
    stamps), the CPUs, busy and stolen ms per interval and CPU, and why there are none."""

    t_ns: np.ndarray
    cpus: list[int]
    busy_ms: np.ndarray
    steal_ms: np.ndarray
    error: str = ""

    def as_keys(self) -> dict[str, Any]:
        """The series as a run's result keys: host_t_ns, host_cpus, host_busy_ms,
        host_steal_ms, host_error."""
        return {"host_t_ns": self.t_ns, "host_cpus": self.cpus, "host_busy_ms": self.busy_ms,
                "host_steal_ms": self.steal_ms, "host_error": self.error}


def _series(r: "HostSeries | Mapping[str, Any]") -> HostSeries | None:
    """``r`` as a :class:`HostSeries`; None where it holds no samples."""
    if isinstance(r, HostSeries):
        return r if len(r.t_ns) else None
    t = r.get("host_t_ns")
    if t is None or not len(t):
        return None
    return HostSeries(t, list(r["host_cpus"]), r["host_busy_ms"], r["host_steal_ms"],
                      r.get("host_error", ""))


def _error(r: "HostSeries | Mapping[str, Any]") -> str:
    return r.error if isinstance(r, HostSeries) else r.get("host_error", "")


class HostStat:
    """/proc/stat sampled every ``interval`` seconds on a daemon thread while the block runs.

    :meth:`result` gives, per interval, its end and each CPU's busy and stolen milliseconds in
    it. Where /proc/stat cannot be read (not Linux), the series is empty and ``error`` says why;
    the run goes on.
    """

    def __init__(self, interval: float = 1.0, path: str = "/proc/stat") -> None:
        self.interval, self.path, self.error = interval, path, ""
        self._samples: list[tuple[int, dict[int, tuple[int, int]]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="paam-hoststat", daemon=True)
        try:
            self._ms_per_tick = 1000.0 / os.sysconf("SC_CLK_TCK")
        except (ValueError, OSError, AttributeError):
            self._ms_per_tick = 10.0

    def __enter__(self) -> "HostStat":
        self._sample()
        if not self.error:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if not self.error:
            self._sample()

    def _sample(self) -> None:
        try:
            with open(self.path) as f:
                text = f.read()
        except OSError as e:
            self.error = f"{self.path}: {e.strerror or e}"
            return
        cpus = parse_proc_stat(text)
        if cpus:
            self._samples.append((time.monotonic_ns(), cpus))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def series(self) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray]:
        """(interval ends ns [n], the CPUs, busy ms [n, cpus], steal ms [n, cpus]); CPUs that
        came or went during the run are left out."""
        return proc_stat_deltas([t for t, _s in self._samples],
                                [s for _t, s in self._samples], self._ms_per_tick)

    def result(self) -> HostSeries:
        """The finished sampling as a :class:`HostSeries`."""
        return HostSeries(*self.series(), error=self.error)


def host_series(host: HostStat) -> dict[str, Any]:
    """A finished :class:`HostStat` as a run's result keys (:meth:`HostSeries.as_keys`)."""
    return host.result().as_keys()


def steal_around(ends_ns, spans_ms, t_ns, steal_ms) -> np.ndarray:
    """For each instance (its end, its length), the most the host stole from all CPUs together
    in one interval that overlaps it, widened by one interval each side (the samples are
    coarse; an instance past either end of the samples gets the nearest one); NaN for every
    instance when there are no samples."""
    t = np.asarray(t_ns, dtype=np.int64)
    ends = np.asarray(ends_ns, dtype=np.int64)
    out = np.full(len(ends), np.nan)
    if not len(t):
        return out
    per = np.asarray(steal_ms, dtype=np.float64).reshape(len(t), -1).sum(axis=1)
    starts = ends - (np.asarray(spans_ms, dtype=np.float64) * 1e6).astype(np.int64)
    lo = np.clip(np.searchsorted(t, starts) - 1, 0, len(t) - 1)
    hi = np.clip(np.searchsorted(t, ends) + 1, 0, len(t) - 1)
    for i, (a, b) in enumerate(zip(lo, hi)):
        out[i] = per[a:b + 1].max()
    return out


def split_by_steal(values, steal, quiet_ms: float = QUIET_STEAL_MS) -> dict[str, Any]:
    """``values`` (one per instance) summarized apart for the instances the host left alone
    (steal around them at most ``quiet_ms`` per interval) and the others, with their
    correlation."""
    v = np.asarray(values, dtype=np.float64)
    s = np.asarray(steal, dtype=np.float64)
    ok = ~np.isnan(s)
    v, s = v[ok], s[ok]
    return {"quiet_steal_ms": quiet_ms, "quiet": summarize(v[s <= quiet_ms]),
            "noisy": summarize(v[s > quiet_ms]), "correlation": correlation(v, s)}


def steal_text(host: dict[str, Any]) -> str:
    """summary.txt's text for :func:`host_summary`: ms stolen per second from all CPUs, mean /
    max, and (in brackets) from the executors' cores; then how many vCPUs the guest used and
    how many CPUs' worth it kept busy (a host steals only from vCPUs that run)."""
    a, e = host["steal_ms_per_s"], host["steal_ms_per_s_executor_cpus"]
    text = (f"{fmt(a['mean'], 0)} / {fmt(a['max'], 0)} "
            f"({fmt(e['mean'], 0)} / {fmt(e['max'], 0)})")
    if "active_cpus" in host:  # (summaries without it say nothing of the vCPUs used)
        text += (f", {len(host['active_cpus'])} vCPUs used, "
                 f"{fmt(host['busy_ms_per_s']['mean'] / 1000.0, 2)} CPUs busy")
    return text


def host_panel(label: str, r: "HostSeries | Mapping[str, Any]", ends_ns, latency_ms,
               t0_ns: int | None = None) -> tuple | None:
    """One :func:`paam_experiments.common.plots.plot_host` panel of a run: the instances and the
    steal in s from the run's start (``t0_ns``; from a mapping, its ``t0_ns`` key); None where
    the host was not sampled."""
    s = _series(r)
    if s is None:
        return None
    t0 = t0_ns if t0_ns is not None else r["t0_ns"]
    return (label, (np.asarray(ends_ns) - t0) / 1e9, latency_ms,
            (np.asarray(s.t_ns) - t0) / 1e9, s.steal_ms.sum(axis=1))


def _host_columns(s: HostSeries, executor_cpus: Iterable[int]) -> list[int]:
    """The columns of the executors' cores in a run's host series, each core once (executors
    mapped onto one core share it)."""
    cpus = list(s.cpus)
    return [cpus.index(c) for c in sorted(set(executor_cpus)) if c in cpus]


def host_summary(r: "HostSeries | Mapping[str, Any]",
                 executor_cpus: Iterable[int]) -> dict[str, Any]:
    """What the host took from the CPUs during a run, per sample summed over all CPUs and over
    the executors' cores; ``error`` where there are not two samples to take a difference of."""
    s = _series(r)
    if s is None:
        return {"error": _error(r) or "fewer than two samples"}
    ex = _host_columns(s, executor_cpus)
    busy, steal = s.busy_ms, s.steal_ms
    per_cpu = {int(c): {"busy_ms_per_s": float(b), "steal_ms_per_s": float(x)}
               for c, b, x in zip(s.cpus, busy.mean(axis=0), steal.mean(axis=0))}
    return {"samples": int(len(s.t_ns)), "steal_ms_per_s": summarize(steal.sum(axis=1)),
            "steal_ms_per_s_executor_cpus": summarize(steal[:, ex].sum(axis=1)),
            "busy_ms_per_s": summarize(busy.sum(axis=1)),
            "active_cpus": [c for c, v in per_cpu.items()
                            if v["busy_ms_per_s"] >= ACTIVE_BUSY_MS_PER_S],
            "per_cpu": per_cpu}


def host_rows(r: "HostSeries | Mapping[str, Any]", executor_cpus: Iterable[int],
              t0_ns: int) -> list[dict[str, Any]]:
    """host_stat.csv's rows of a run, one per /proc/stat sample (t_s: seconds since ``t0_ns``,
    the clock of the run's other CSV files): busy and stolen ms of all CPUs, stolen ms of the
    executors' cores, stolen and busy ms of each CPU."""
    s = _series(r)
    if s is None:
        return []
    ex = _host_columns(s, executor_cpus)
    return [{"t_s": round((int(ti) - t0_ns) / 1e9, 3), "busy_ms": float(b.sum()),
             "steal_ms": float(st.sum()), "steal_ms_executor_cpus": float(st[ex].sum()),
             **{f"steal_ms_cpu{c}": float(x) for c, x in zip(s.cpus, st)},
             **{f"busy_ms_cpu{c}": float(x) for c, x in zip(s.cpus, b)}}
            for ti, b, st in zip(s.t_ns, s.busy_ms, s.steal_ms)]
