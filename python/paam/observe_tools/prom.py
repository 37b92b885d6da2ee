"""``paam metrics``: paamd's live statistics as Prometheus metrics (prometheus_client).

A custom collector asks paamd for one snapshot per scrape (at most one per ``min_interval``
seconds: scrapes closer together share a snapshot) and turns it into metric families. When paamd
cannot be asked, the scrape still answers, with ``paam_up 0`` alone.

Latencies are the server's window (``window_s``) quantiles as gauges with a ``quantile`` label
("0.5", "0.99", "1" for the maximum); a histogram would need the raw samples, which the server
keeps to itself.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator, Optional

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily,
                                    Metric)
from prometheus_client.registry import Collector

from .source import ToolError

QUANTILES = (("p50", "0.5"), ("p99", "0.99"), ("max", "1"))
STAGES = ("dispatch", "queue", "launch", "device", "complete", "total")
LANE = ["unit", "bucket", "lane"]
CLIENT = ["client", "id", "priority"]


class PaamCollector(Collector):
    """Calls `fetch` (a function returning one snapshot, raising ToolError when paamd is not
    there) at most once per `min_interval` seconds, on a scrape."""

    def __init__(self, fetch: Callable[[], dict[str, Any]], min_interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._min_interval = float(min_interval)
        self._clock = clock
        self._lock = threading.Lock()  # the HTTP server scrapes from several threads
        self._last: Optional[tuple[float, Optional[dict[str, Any]]]] = None
        self.last_error: Optional[str] = None

    def _snapshot(self) -> Optional[dict[str, Any]]:
        with self._lock:
            now = self._clock()
            if self._last is not None and now - self._last[0] < self._min_interval:
                return self._last[1]
            try:
                snap: Optional[dict[str, Any]] = self._fetch()
                self.last_error = None
            except ToolError as err:
                snap, self.last_error = None, str(err)
            self._last = (now, snap)
            return snap

    def describe(self) -> list[Metric]:
        return []  # families depend on the snapshot; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot()
        up = GaugeMetricFamily("paam_up", "1 when paamd answered the last statistics request")
        up.add_metric([], 0 if snap is None else 1)
        yield up
        if snap is not None:
            yield from families(snap)


def _labels(lane: dict[str, Any]) -> list[str]:
    return [str(lane["unit"]), str(lane["bucket"]), str(lane["lane"])]


def _client_labels(c: dict[str, Any]) -> list[str]:
    return [c.get("name") or f"client {c['id']}", str(c["id"]), str(c["priority"])]


def families(snap: dict[str, Any]) -> Iterator[Metric]:
    """The metric families of one snapshot (paam.observe's schema)."""
    srv, tot = snap["server"], snap["totals"]
    info = InfoMetricFamily("paam_server", "the paamd answering",
                            labels=["backend", "admission", "socket", "pid"])
    info.add_metric([str(srv["backend"]), str(srv["admission"]), str(srv["socket"]),
                     str(srv["pid"])], {})
    yield info
    for name, key, doc in (("paam_uptime_seconds", "uptime_s", "seconds since paamd started"),
                           ("paam_buckets", "buckets", "priority buckets per unit"),
                           ("paam_units", "units", "devices (units) served"),
                           ("paam_window_seconds", "window_s",
                            "the window the latency quantiles and busy shares cover")):
        g = GaugeMetricFamily(name, doc)
        g.add_metric([], float(srv[key]))
        yield g
    req = CounterMetricFamily("paam_server_requests", "requests that ended, by outcome",
                              labels=["outcome"])
    for outcome in ("completed", "failed", "cancelled"):
        req.add_metric([outcome], float(tot[f"requests_{outcome}"]))
    yield req
    for key, doc in (("protocol_errors", "malformed messages or descriptors refused"),
                     ("registrations", "clients registered"),
                     ("clients_reaped", "dead clients whose resources were reclaimed"),
                     ("connections_dropped", "control connections dropped")):
        c = CounterMetricFamily(f"paam_{key}", doc)
        c.add_metric([], float(tot[key]))
        yield c
    g = GaugeMetricFamily("paam_active_clients", "clients registered now")
    g.add_metric([], float(tot["active_clients"]))
    yield g

    lanes = snap["lanes"]
    served = CounterMetricFamily("paam_requests", "requests a lane ran", labels=LANE)
    failed = CounterMetricFamily("paam_requests_failed", "requests that failed on a lane",
                                 labels=LANE)
    depth = GaugeMetricFamily("paam_queue_depth", "requests waiting in the lane's bucket now",
                              labels=LANE)
    inflight = GaugeMetricFamily("paam_in_flight", "1 while the lane runs a request",
                                 labels=LANE)
    busy = GaugeMetricFamily("paam_busy_share", "device busy time over the window, 0..1",
                             labels=LANE)
    lat = GaugeMetricFamily("paam_stage_latency_us",
                            "stage latency over the window (µs); quantile 1 is the maximum",
                            labels=[*LANE, "stage", "quantile"])
    samples = GaugeMetricFamily("paam_stage_samples", "requests in the window", labels=LANE)
    for lane in lanes:
        lb = _labels(lane)
        served.add_metric(lb, float(lane["served"]))
        failed.add_metric(lb, float(lane.get("failed", 0)))
        depth.add_metric(lb, float(lane["queue_depth"]))
        inflight.add_metric(lb, float(lane["in_flight"]))
        busy.add_metric(lb, float(lane["busy_share"]))
        stages = lane["stages_us"]
        samples.add_metric(lb, float(stages["total"]["n"]))
        for stage in STAGES:
            s = stages.get(stage)
            if not s or not s["n"]:
                continue
            for key, q in QUANTILES:
                lat.add_metric([*lb, stage, q], float(s[key]))
    yield from (served, failed, depth, inflight, busy, lat, samples)

    creq = CounterMetricFamily("paam_client_requests", "requests a client sent that ended",
                               labels=CLIENT)
    cfail = CounterMetricFamily("paam_client_requests_failed", "a client's failed requests",
                                labels=CLIENT)
    cbucket = GaugeMetricFamily("paam_client_bucket", "the bucket a client's requests run in now",
                                labels=CLIENT)
    clat = GaugeMetricFamily("paam_client_latency_us",
                             "a client's submit-to-completion latency over the window (µs)",
                             labels=[*CLIENT, "quantile"])
    bound = GaugeMetricFamily("paam_client_bound_ms",
                              "the analysis' bound on the client's segment response time",
                              labels=CLIENT)
    worst = GaugeMetricFamily("paam_client_worst_observed_ms",
                              "the worst segment response time observed", labels=CLIENT)
    viol = CounterMetricFamily("paam_bound_violations",
                               "observed responses above the analysis' bound", labels=CLIENT)
    for c in snap["clients"]:
        lb = _client_labels(c)
        creq.add_metric(lb, float(c["requests"]))
        cfail.add_metric(lb, float(c.get("failed", 0)))
        cbucket.add_metric(lb, float(c["bucket"]))
        if c["latency_us"]["n"]:
            for key, q in QUANTILES:
                clat.add_metric([*lb, q], float(c["latency_us"][key]))
        if c.get("bound_ms") is not None:
            bound.add_metric(lb, float(c["bound_ms"]))
        if c.get("worst_observed_ms") is not None:
            worst.add_metric(lb, float(c["worst_observed_ms"]))
        viol.add_metric(lb, float(c.get("violations", 0)))
    yield from (creq, cfail, cbucket, clat, bound, worst, viol)

    total = CounterMetricFamily("paam_violations", "bound violations over all clients")
    total.add_metric([], float(snap.get("violations_total", 0)))
    yield total
    ov = snap.get("overheads") or {}
    for key, name, doc in (("epsilon_ms", "paam_epsilon_ms",
                            "ε, the server's per-request overhead: as the analysis used it and "
                            "as observed (p99)"),
                           ("kappa_ms", "paam_kappa_ms",
                            "κ, the executor's overhead: as the analysis used it and as "
                            "observed (p99)")):
        g = GaugeMetricFamily(name, doc, labels=["kind"])
        for kind in ("used", "observed_p99"):
            v = (ov.get(key) or {}).get(kind)
            if v is not None:
                g.add_metric([kind], float(v))
        yield g
