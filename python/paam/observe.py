"""Live statistics and per-request traces of a running paamd, read over its socket without
registering (what ``paam top``, ``paam trace`` and ``paam metrics`` are built on)::

    snap = paam.observe.stats()                 # one snapshot, a dict
    with paam.observe.Trace() as trace:         # recording from here
        ...
        records = trace.read()                  # what was recorded since the last read

paamd answers only peers its access policy lets in (its own uid by default), and this side
talks only to a paamd whose uid it trusts (as :class:`paam.Client` does). A connection that
asks nothing for a minute is closed by paamd; a trace stops when its connection goes.

Snapshot (times in microseconds unless named ``_ms``/``_ns``; ``S`` is ``{"n", "p50", "p99",
"max"}`` over the recent window, zeros when ``n`` is 0)::

    server    {pid, uid, backend, buckets, units, socket, uptime_s, window_s, admission, now_ns}
    totals    {requests_completed, requests_failed, requests_cancelled, protocol_errors,
               registrations, clients_reaped, active_clients, connections_dropped}
    lanes     [{unit, bucket, lane, queue_depth, in_flight, served, failed, busy_share,
                stages_us: {dispatch, queue, launch, device, complete, total: S}}]
    clients   [{id, name, pid, uid, priority, bucket, unit, timed, requests, failed,
                latency_us: S, bound_ms, worst_observed_ms, violations}]   (most urgent first)
    overheads {epsilon_ms: {used, observed_p99}, kappa_ms: {used, observed_p99}}
    violations_total

Stages from a request's stamps: dispatch = dequeued - submitted, queue = picked - dequeued,
launch = device_start - picked, device = device_end - device_start, complete = completed -
device_end, total = completed - submitted. A client's ``requests`` counts every answered
request, ``failed`` among them. ``bound_ms`` is the bound the response-time analysis puts on
one request of the client (``--admission analysis`` and a timing model; else None);
``violations`` counts its requests that took longer. ``overheads``: epsilon and kappa as the
analysis used them (None without analysis) and as observed under the current load (None
while nothing showed them): epsilon the time a request spends in paamd besides waiting for its
bucket and running, kappa the extra start delay of requests that met a lower bucket's kernel
running.

Trace record (one per request that ran; CLOCK_MONOTONIC ns, one clock for every process)::

    {client, client_name, pid, priority, kernel, unit, bucket, lane, sequence, status,
     submitted, dequeued, picked, device_start, device_end, completed}

``status`` is "ok" or the error's name (paam.errors codes).
"""
from __future__ import annotations

import json
from typing import Any

from . import _core, errors

__all__ = ["stats", "Trace"]

_RECORD_FIELDS = ("client", "pid", "priority", "kernel", "unit", "bucket", "lane", "sequence", "status",
                  "submitted", "dequeued", "picked", "device_start", "device_end", "completed")


def _connect(socket: str | None, timeout: float) -> "_core.ControlConnection":
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    # "": the default socket path ($PAAM_SOCKET, $XDG_RUNTIME_DIR/paam/paamd.sock, ...).
    return _core.ControlConnection(str(socket) if socket else "", max(1, int(timeout * 1000)))


def stats(socket: str | None = None, timeout: float = 2.0) -> dict[str, Any]:
    """One snapshot of paamd's live statistics (the schema above). Raises
    :class:`paam.ServerNotRunning` when nothing listens on the socket,
    :class:`paam.PermissionDenied` when paamd refuses this uid (or runs as an untrusted one),
    :class:`paam.PaamTimeout` when it does not answer within ``timeout`` seconds."""
    conn = _connect(socket, timeout)
    try:
        return json.loads(conn.stats())
    finally:
        conn.close()


class Trace:
    """Records every request paamd runs, from :meth:`start` (or entering the ``with`` block)
    to :meth:`stop` (or closing). paamd keeps the records in a bounded ring per lane, about
    ``capacity`` records in all: read them often enough (``paam trace`` reads four times a
    second) or the ones that do not fit are counted in :attr:`dropped`. paamd records one trace
    at a time: a second one raises :class:`paam.errors.Busy`."""

    def __init__(self, socket: str | None = None, capacity: int = 1 << 20, timeout: float = 2.0):
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = int(capacity)
        self._conn = _connect(socket, timeout)
        self._dropped = 0
        self._recording = False

    def start(self) -> None:
        """Starts recording (again: what the previous recording of this Trace holds is dropped)."""
        self._conn.trace_start(min(self.capacity, 0xFFFFFFFF))
        self._dropped = 0
        self._recording = True

    def read(self) -> list[dict[str, Any]]:
        """The records paamd holds for this trace, oldest completion first; they are gone from
        paamd once read."""
        records: list[dict[str, Any]] = []
        for chunk in self._conn.trace_read():
            data = json.loads(chunk)
            names = data.get("clients", {})
            self._dropped = int(data.get("dropped", self._dropped))
            for row in data["records"]:
                r = dict(zip(_RECORD_FIELDS, row))
                r["client_name"] = names.get(str(r["client"]), "")
                records.append(r)
        records.sort(key=lambda r: r["completed"])  # chunks come lane by lane
        return records

    def stop(self) -> None:
        """Stops recording. What was recorded can still be read."""
        if self._recording and not self._conn.closed:
            self._dropped = int(self._conn.trace_stop())
        self._recording = False

    @property
    def dropped(self) -> int:
        """Records lost because a ring was full, since :meth:`start` (as of the last read or stop)."""
        return self._dropped

    def close(self) -> None:
        """Stops recording and closes the connection (paamd would stop the trace anyway)."""
        if self._conn.closed:
            return
        try:
            self.stop()
        except (errors.ServerDied, errors.Closed):
            pass  # paamd is gone, and its trace with it
        finally:
            self._conn.close()

    def __enter__(self) -> "Trace":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
