"""paamd's live statistics on ``/diagnostics`` (``diagnostic_msgs/DiagnosticArray``), the topic
ROS 2 tools watch (rqt_robot_monitor, the diagnostic aggregator, ``ros2 topic echo``).

Once a period the bridge asks paamd for a statistics snapshot (:func:`paam.observe.stats`) and
publishes one array: a status "paamd" for the server (totals, ε and κ used and observed), one
per lane ("paamd: unit U bucket B lane L") and one per client ("paamd: client NAME (id N)"),
the latter at level WARN while the client has bound violations. When paamd cannot be asked the
array holds the "paamd" status alone, at level ERROR, saying why.

The snapshot is fetched and published on a thread of its own, so a slow or absent server never
delays the bridge's executor (registrations, heartbeats).
"""
from __future__ import annotations

import socket as socketlib
import threading
from typing import Any, Callable, Optional

TOPIC = "/diagnostics"
PERIOD_SEC = 1.0
OK, WARN, ERROR = 0, 1, 2  # diagnostic_msgs/DiagnosticStatus levels


def _q(s: dict[str, Any], key: str) -> str:
    return f"{float(s[key]):.1f}" if s.get("n") else ""


def statuses(snap: Optional[dict[str, Any]], *, hardware_id: str,
             error: str = "") -> list[tuple[int, str, str, list[tuple[str, str]]]]:
    """(level, name, message, [(key, value)]) of each status for a snapshot (None: paamd could
    not be asked, `error` says why). Pure: the ROS message is built by :func:`to_message`."""
    if snap is None:
        return [(ERROR, "paamd", error or "paamd not reachable", [("hardware_id", hardware_id)])]
    srv, tot = snap["server"], snap["totals"]
    ov = snap.get("overheads") or {}
    violations = int(snap.get("violations_total", 0))
    values = [("pid", str(srv["pid"])), ("backend", str(srv["backend"])),
              ("units", str(srv["units"])), ("buckets", str(srv["buckets"])),
              ("admission", str(srv["admission"])), ("uptime_s", f"{float(srv['uptime_s']):.0f}"),
              ("active_clients", str(tot["active_clients"])),
              ("requests_completed", str(tot["requests_completed"])),
              ("requests_failed", str(tot["requests_failed"])),
              ("bound_violations", str(violations))]
    for key, label in (("epsilon_ms", "epsilon_ms"), ("kappa_ms", "kappa_ms")):
        for kind in ("used", "observed_p99"):
            v = (ov.get(key) or {}).get(kind)
            values.append((f"{label}_{kind}", "" if v is None else f"{float(v):.3f}"))
    out = [(WARN if violations else OK, "paamd",
            f"{tot['active_clients']} clients, {violations} bound violations", values)]
    for lane in sorted(snap["lanes"], key=lambda l: (l["unit"], l["bucket"], l["lane"])):
        total = lane["stages_us"]["total"]
        failed = int(lane.get("failed", 0))
        out.append((OK, f"paamd: unit {lane['unit']} bucket {lane['bucket']} lane {lane['lane']}",
                    f"queue {lane['queue_depth']}, busy {100 * float(lane['busy_share']):.0f}%",
                    [("queue_depth", str(lane["queue_depth"])),
                     ("in_flight", str(lane["in_flight"])), ("served", str(lane["served"])),
                     ("failed", str(failed)), ("busy_share", f"{float(lane['busy_share']):.3f}"),
                     ("total_p50_us", _q(total, "p50")), ("total_p99_us", _q(total, "p99")),
                     ("total_max_us", _q(total, "max"))]))
    for c in sorted(snap["clients"], key=lambda c: (-int(c["priority"]), int(c["id"]))):
        v = int(c.get("violations", 0))
        bound, worst = c.get("bound_ms"), c.get("worst_observed_ms")
        if v:
            message = f"{v} bound violations"
            if bound is not None and worst is not None:
                message += f": worst {worst:.3f} ms against a bound of {bound:.3f} ms"
        else:
            message = f"{c['requests']} requests"
        lat = c["latency_us"]
        out.append((WARN if v else OK, f"paamd: client {c['name'] or '?'} (id {c['id']})", message,
                    [("pid", str(c["pid"])), ("uid", str(c["uid"])),
                     ("priority", str(c["priority"])), ("bucket", str(c["bucket"])),
                     ("requests", str(c["requests"])), ("failed", str(c.get("failed", 0))),
                     ("latency_p50_us", _q(lat, "p50")), ("latency_p99_us", _q(lat, "p99")),
                     ("bound_ms", "" if bound is None else f"{bound:.3f}"),
                     ("worst_observed_ms", "" if worst is None else f"{worst:.3f}"),
                     ("violations", str(v))]))
    return out


def to_message(entries, *, hardware_id: str, stamp=None):
    """A DiagnosticArray of :func:`statuses`' entries."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    msg = DiagnosticArray()
    if stamp is not None:
        msg.header.stamp = stamp
    for level, name, message, values in entries:
        st = DiagnosticStatus(level=bytes([level]), name=name, message=message,
                              hardware_id=hardware_id)
        st.values = [KeyValue(key=k, value=v) for k, v in values]
        msg.status.append(st)
    return msg


class DiagnosticsPublisher:
    """Publishes paamd's statistics on :data:`TOPIC` every `period` seconds from its own thread.
    ``fetch`` (tests) returns a snapshot or raises; default: :func:`paam.observe.stats`."""

    def __init__(self, node, socket: str, *, period: float = PERIOD_SEC,
                 fetch: Optional[Callable[[], dict]] = None,
                 log: Optional[Callable[[str], None]] = None) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        self.node = node
        self.socket = socket
        self.period = float(period)
        self.hardware_id = f"paamd@{socketlib.gethostname()}:{socket}"
        self._fetch = fetch
        self._log = log or (lambda line: None)
        self._pub = node.create_publisher(DiagnosticArray, TOPIC, 10)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="paam-diagnostics", daemon=True)
        self.published = 0

    def start(self) -> "DiagnosticsPublisher":
        self._thread.start()
        return self

    def close(self) -> None:
        """Stops the thread (before the node goes). Idempotent."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        if self._pub is not None:
            self.node.destroy_publisher(self._pub)
            self._pub = None

    def snapshot(self) -> tuple[Optional[dict], str]:
        from paam.observe_tools.source import explain
        try:
            if self._fetch is not None:
                return self._fetch(), ""
            from paam import observe
            return observe.stats(self.socket, timeout=min(2.0, self.period)), ""
        except ImportError as err:
            return None, f"this paam has no live statistics ({err})"
        except Exception as err:  # noqa: BLE001 - reported on the topic, and the loop goes on
            return None, explain(err, self.socket)

    def publish_once(self) -> None:
        snap, error = self.snapshot()
        msg = to_message(statuses(snap, hardware_id=self.hardware_id, error=error),
                         hardware_id=self.hardware_id,
                         stamp=self.node.get_clock().now().to_msg())
        if self._pub is not None:
            self._pub.publish(msg)
            self.published += 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.publish_once()
            except Exception as exc:  # noqa: BLE001 - a failed publish must not end the loop
                self._log(f"diagnostics: {exc}")
            self._stop.wait(self.period)
