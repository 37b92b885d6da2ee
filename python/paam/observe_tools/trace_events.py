"""Request trace records (:class:`paam.observe.Trace`) as Chrome trace-event JSON, the format
ui.perfetto.dev and chrome://tracing open.

Layout:

* process "paamd": one track (thread) per (unit, bucket, lane) worker; each request it ran is a
  slice from picked to completed, and inside it the kernel on the device (device_start to
  device_end) is a nested slice.
* one process per client pid, one track per client in it: each request from submitted to
  completed.
* a flow arrow per request from the client's slice (at submit) to the lane's slice (bound to
  the slice that starts when the worker picked it).

Timestamps are microseconds since the earliest stamp in the records (CLOCK_MONOTONIC; the
origin in ns is kept in ``otherData``). A track whose slices would overlap without nesting
(a client with requests of several kernels outstanding at once) spills into further rows named
"... #2", "... #3", so every track's slices nest as the format requires.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

STAMPS = ("submitted", "dequeued", "picked", "device_start", "device_end", "completed")
# (from, to, name) of each stage, as paam.observe defines them
STAGES = (("submitted", "dequeued", "dispatch"), ("dequeued", "picked", "queue"),
          ("picked", "device_start", "launch"), ("device_start", "device_end", "device"),
          ("device_end", "completed", "complete"), ("submitted", "completed", "total"))


def _lane_key(r: dict[str, Any]) -> tuple[int, int, int]:
    return int(r["unit"]), int(r["bucket"]), int(r["lane"])


def _client_label(r: dict[str, Any]) -> str:
    name = r.get("client_name") or f"client {r['client']}"
    return f"{name} (id {r['client']}, priority {r['priority']})"


class _Rows:
    """Greedy packing of one track's slices into rows where each slice starts after the
    previous one on its row ended (slices come in start order)."""

    def __init__(self) -> None:
        self.ends: list[int] = []

    def place(self, start: int, end: int) -> int:
        for i, last_end in enumerate(self.ends):
            if start >= last_end:
                self.ends[i] = end
                return i
        self.ends.append(end)
        return len(self.ends) - 1


def _us(ns: int) -> float:
    """ns as µs, to the ns (what the format's readers round to anyway)."""
    return round(ns / 1000.0, 3)


def _usable(r: dict[str, Any], a: str, b: str) -> bool:
    return int(r.get(a) or 0) > 0 and int(r.get(b) or 0) >= int(r.get(a) or 0)


def _args(r: dict[str, Any]) -> dict[str, Any]:
    """A request's identity and its stage durations (µs), shown when its slice is selected."""
    args: dict[str, Any] = {"client": r.get("client_name") or int(r["client"]),
                            "client_id": int(r["client"]), "priority": int(r["priority"]),
                            "kernel": r.get("kernel", ""), "sequence": int(r.get("sequence", 0)),
                            "status": r.get("status", "ok"), "unit": int(r["unit"]),
                            "bucket": int(r["bucket"]), "lane": int(r["lane"])}
    for a, b, stage in STAGES:
        if _usable(r, a, b):
            args[f"{stage}_us"] = (int(r[b]) - int(r[a])) / 1000.0
    return args


def to_trace_events(records: Iterable[dict[str, Any]], *, server_pid: int = 0,
                    dropped: int = 0, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The trace-event document (a dict ready for json.dump) for these records."""
    records = [r for r in records if int(r.get("submitted") or 0) > 0]
    stamps = [int(r[s]) for r in records for s in STAMPS if int(r.get(s) or 0) > 0]
    origin = min(stamps) if stamps else 0

    def ts(ns: int) -> float:
        return round((int(ns) - origin) / 1000.0, 3)

    lane_keys = sorted({_lane_key(r) for r in records if _usable(r, "picked", "completed")})
    # Thread ids: lanes 1.., each spill row of a lane after them; clients per pid likewise.
    lane_rows: dict[tuple[int, int, int], _Rows] = {k: _Rows() for k in lane_keys}
    client_rows: dict[int, _Rows] = defaultdict(_Rows)
    tids: dict[tuple, int] = {}
    names: dict[tuple, tuple[int, str, int]] = {}   # track -> (pid, thread name, sort index)
    events: list[dict[str, Any]] = []

    def track(key: tuple, pid: int, name: str, sort: int) -> int:
        if key not in tids:
            tids[key] = len(tids) + 1
            names[key] = (pid, name, sort)
        return tids[key]

    client_pids: dict[int, tuple[int, str]] = {}
    args_of = [_args(r) for r in records]
    client_track: dict[int, tuple[int, int]] = {}   # record index -> (pid, tid)
    # Client slices in submit order, lane slices in pick order: each row packs in start order.
    for i in sorted(range(len(records)), key=lambda i: int(records[i]["submitted"])):
        r = records[i]
        cid, cpid = int(r["client"]), int(r.get("pid") or 0)
        client_pids.setdefault(cpid, (cpid, r.get("client_name") or f"pid {cpid}"))
        if not _usable(r, "submitted", "completed"):
            continue
        row = client_rows[cid].place(int(r["submitted"]), int(r["completed"]))
        label = _client_label(r)
        tid = track(("client", cid, row), cpid, label + (f" #{row + 1}" if row else ""),
                    1000 + cid * 64 + row)
        a = args_of[i]  # the lane slice carries the stages; this one what the client saw
        events.append({"ph": "X", "name": r.get("kernel") or "request", "cat": "client",
                       "pid": cpid, "tid": tid, "ts": ts(r["submitted"]),
                       "dur": _us(int(r["completed"]) - int(r["submitted"])),
                       "args": {k: a[k] for k in ("sequence", "status", "bucket", "lane",
                                                  "total_us") if k in a}})
        client_track[i] = (cpid, tid)
    lane_order = [i for i in range(len(records)) if _usable(records[i], "picked", "completed")]
    for i in sorted(lane_order, key=lambda i: int(records[i]["picked"])):
        r = records[i]
        kernel = r.get("kernel") or "request"
        key = _lane_key(r)
        row = lane_rows[key].place(int(r["picked"]), int(r["completed"]))
        u, b, ln = key
        tid = track(("lane", key, row), server_pid,
                    f"unit {u} · bucket {b} · lane {ln}" + (f" #{row + 1}" if row else ""),
                    lane_keys.index(key) * 64 + row)
        who = r.get("client_name") or f"client {r['client']}"
        events.append({"ph": "X", "name": f"{who}: {kernel}", "cat": "lane", "pid": server_pid,
                       "tid": tid, "ts": ts(r["picked"]),
                       "dur": _us(int(r["completed"]) - int(r["picked"])),
                       "args": args_of[i]})
        if _usable(r, "device_start", "device_end") and \
                int(r["picked"]) <= int(r["device_start"]) and \
                int(r["device_end"]) <= int(r["completed"]):
            events.append({"ph": "X", "name": kernel, "cat": "device", "pid": server_pid,
                           "tid": tid, "ts": ts(r["device_start"]),
                           "dur": _us(int(r["device_end"]) - int(r["device_start"])),
                           "args": {"client": args_of[i]["client"],
                                    "sequence": args_of[i]["sequence"]}})
        if i in client_track:
            common = {"name": "request", "cat": "flow", "id": i + 1}
            events.append({**common, "ph": "s", "pid": client_track[i][0],
                           "tid": client_track[i][1], "ts": ts(r["submitted"])})
            events.append({**common, "ph": "f", "bp": "e", "pid": server_pid, "tid": tid,
                           "ts": ts(r["picked"])})

    # Per track in time order; a parent before the slice it encloses (same start: longer first),
    # a flow's end after the slice it binds to.
    order = {"X": 0, "s": 1, "f": 1}
    events.sort(key=lambda e: (e["pid"], e["tid"], e["ts"], order[e["ph"]], -e.get("dur", 0)))

    metadata: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": server_pid, "tid": 0,
         "args": {"name": "paamd" + (f" (pid {server_pid})" if server_pid else "")}},
        {"ph": "M", "name": "process_sort_index", "pid": server_pid, "tid": 0,
         "args": {"sort_index": 0}}]
    for n, (cpid, (_, cname)) in enumerate(sorted(client_pids.items()), 1):
        if cpid == server_pid:
            continue
        metadata.append({"ph": "M", "name": "process_name", "pid": cpid, "tid": 0,
                         "args": {"name": f"client process {cpid} ({cname})"}})
        metadata.append({"ph": "M", "name": "process_sort_index", "pid": cpid, "tid": 0,
                         "args": {"sort_index": n}})
    for key, tid in tids.items():
        pid, name, sort = names[key]
        metadata.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                         "args": {"name": name}})
        metadata.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                         "args": {"sort_index": sort}})
    other = {"clock": "CLOCK_MONOTONIC", "origin_ns": origin, "records": len(records),
             "dropped": int(dropped)}
    other.update(meta or {})
    return {"traceEvents": metadata + events, "displayTimeUnit": "ms", "otherData": other}
