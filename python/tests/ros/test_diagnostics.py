"""paamd's statistics on /diagnostics: what the publisher sends, and the bridge sending it."""
from __future__ import annotations

import os
import sys
import time
import uuid

import pytest

from conftest import Procs

pytestmark = pytest.mark.timeout(120)

pytest.importorskip("diagnostic_msgs.msg")


def _stats(n, p50, p99, mx):
    return {"n": n, "p50": p50, "p99": p99, "max": mx}


def _snapshot():
    stages = {k: _stats(10, 1.0, 2.0, 3.0)
              for k in ("dispatch", "queue", "launch", "device", "complete", "total")}
    lane = lambda b: {  # noqa: E731
        "unit": 0, "bucket": b, "lane": 0, "queue_depth": b, "in_flight": 0,
        "served": 10 * (b + 1), "failed": 0, "busy_share": 0.25, "stages_us": stages}
    client = lambda cid, name, prio, v: {  # noqa: E731
        "id": cid, "name": name, "pid": 10 + cid, "uid": 0, "priority": prio, "bucket": 0,
        "unit": 0, "timed": True, "requests": 5, "failed": 0, "latency_us": _stats(5, 1, 2, 3),
        "bound_ms": 1.0, "worst_observed_ms": 1.5 if v else 0.5, "violations": v}
    return {"server": {"pid": 1, "uid": 0, "backend": "cpu", "buckets": 2, "units": 1,
                       "socket": "/s", "uptime_s": 3.0, "window_s": 10.0, "admission": "analysis",
                       "now_ns": 1},
            "totals": {"requests_completed": 30, "requests_failed": 0, "requests_cancelled": 0,
                       "protocol_errors": 0, "registrations": 2, "clients_reaped": 0,
                       "active_clients": 2, "connections_dropped": 0},
            "lanes": [lane(0), lane(1)],
            "clients": [client(1, "ok-client", 3, 0), client(2, "late-client", 9, 2)],
            "overheads": {"epsilon_ms": {"used": 0.05, "observed_p99": 0.04},
                          "kappa_ms": {"used": None, "observed_p99": None}},
            "violations_total": 2}


class DiagnosticsWatcher:
    """Collects DiagnosticArray messages on /diagnostics in a context of its own."""

    def __init__(self) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self.ctx = Context()
        rclpy.init(context=self.ctx, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
        self.node = rclpy.create_node(f"diag_probe_{uuid.uuid4().hex[:6]}", context=self.ctx)
        self.seen: list = []
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self.seen.append, 10)
        self.executor = SingleThreadedExecutor(context=self.ctx)
        self.executor.add_node(self.node)

    def wait_for(self, match, timeout_sec: float):
        deadline = time.monotonic() + timeout_sec
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.1)
            for msg in self.seen:
                if match(msg):
                    return msg
        return None

    def close(self) -> None:
        import rclpy
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)


@pytest.fixture
def watcher():
    w = DiagnosticsWatcher()
    try:
        yield w
    finally:
        w.close()


def _level(status) -> int:
    return status.level[0] if isinstance(status.level, (bytes, bytearray)) else int(status.level)


def test_publisher_sends_one_status_per_lane_and_client(ros_context, watcher):
    import rclpy

    from paam.ros.diagnostics import OK, WARN, DiagnosticsPublisher
    socket = f"/tmp/diag-{uuid.uuid4().hex[:8]}.sock"
    node = rclpy.create_node(f"diag_pub_{uuid.uuid4().hex[:6]}", context=ros_context)
    pub = DiagnosticsPublisher(node, socket, period=0.2, fetch=_snapshot).start()
    try:
        msg = watcher.wait_for(lambda m: m.status and socket in m.status[0].hardware_id, 30)
    finally:
        pub.close()
        node.destroy_node()
    assert msg is not None, "no DiagnosticArray for this publisher on /diagnostics"
    names = [s.name for s in msg.status]
    assert names == ["paamd", "paamd: unit 0 bucket 0 lane 0", "paamd: unit 0 bucket 1 lane 0",
                     "paamd: client late-client (id 2)", "paamd: client ok-client (id 1)"]
    levels = {s.name: _level(s) for s in msg.status}
    assert levels["paamd: client late-client (id 2)"] == WARN
    assert levels["paamd: client ok-client (id 1)"] == OK
    assert levels["paamd"] == WARN  # the server has violations
    lane1 = {kv.key: kv.value for kv in msg.status[2].values}
    assert lane1["served"] == "20" and lane1["queue_depth"] == "1"
    late = {kv.key: kv.value for kv in msg.status[3].values}
    assert late["violations"] == "2" and late["worst_observed_ms"] == "1.500"
    assert msg.header.stamp.sec > 0 or msg.header.stamp.nanosec > 0


def test_bridge_publishes_diagnostics_and_says_when_paamd_is_missing(watcher):
    socket = f"/tmp/no-paamd-{uuid.uuid4().hex[:8]}.sock"
    name = f"bridge_{uuid.uuid4().hex[:8]}"
    procs = Procs()
    try:
        p = procs.start([sys.executable, "-m", "paam.cli", "bridge", "--name", name,
                         "--socket", socket])
        procs.readline_until(p, f"paam bridge '{name}' ready", 30)
        msg = watcher.wait_for(lambda m: m.status and socket in m.status[0].hardware_id, 30)
    finally:
        procs.cleanup()
    assert msg is not None, "the bridge published nothing on /diagnostics"
    assert [s.name for s in msg.status] == ["paamd"]
    assert _level(msg.status[0]) == 2  # ERROR
    assert f"no paamd at {socket}" in msg.status[0].message


def test_bridge_publishes_paamds_lanes_and_clients(watcher):
    import paam
    name = f"bridge_{uuid.uuid4().hex[:8]}"
    procs = Procs()
    with paam.testing.start_server(buckets=2, device_cpu=-2) as srv, \
            paam.Client(priority=4, kernels=["spin"], socket=srv.socket_path,
                        name="diag-client") as client:
        for _ in range(3):
            client.request("spin", duration_ms=0.1)
        try:
            p = procs.start([sys.executable, "-m", "paam.cli", "bridge", "--name", name,
                             "--socket", srv.socket_path])
            procs.readline_until(p, f"paam bridge '{name}' ready", 30)
            msg = watcher.wait_for(
                lambda m: m.status and srv.socket_path in m.status[0].hardware_id
                and any("diag-client" in s.name for s in m.status), 30)
        finally:
            procs.cleanup()
    assert msg is not None, "no /diagnostics with the registered client"
    names = [s.name for s in msg.status]
    assert names[0] == "paamd" and _level(msg.status[0]) == 0
    assert [n for n in names if n.startswith("paamd: unit")] == \
        ["paamd: unit 0 bucket 0 lane 0", "paamd: unit 0 bucket 1 lane 0"]
    mine = next(s for s in msg.status if "diag-client" in s.name)
    values = {kv.key: kv.value for kv in mine.values}
    assert values["requests"] == "3" and values["priority"] == "4" and _level(mine) == 0


def test_bridge_without_diagnostics_publishes_none(watcher):
    socket = f"/tmp/no-paamd-{uuid.uuid4().hex[:8]}.sock"
    name = f"bridge_{uuid.uuid4().hex[:8]}"
    procs = Procs()
    try:
        p = procs.start([sys.executable, "-m", "paam.cli", "bridge", "--name", name,
                         "--socket", socket, "--no-diagnostics"])
        procs.readline_until(p, f"paam bridge '{name}' ready", 30)
        # three periods of the publisher: nothing of this bridge's comes
        msg = watcher.wait_for(lambda m: m.status and socket in m.status[0].hardware_id, 3.5)
    finally:
        procs.cleanup()
    assert msg is None
