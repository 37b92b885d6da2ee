"""paam bridge and RemoteClient end to end: paamd, a bridge process and remote clients."""
from __future__ import annotations

import os
import signal
import sys
import time
import uuid

import numpy as np
import pytest

from conftest import Procs, read_line_until, spin_until, wait_until_ready

pytestmark = pytest.mark.timeout(120)

paam = pytest.importorskip("paam")


def _start_bridge(procs: Procs, socket: str, *extra: str, name: str = ""):
    name = name or f"bridge_{uuid.uuid4().hex[:8]}"
    p = procs.start([sys.executable, "-m", "paam.cli", "bridge", "--name", name,
                     "--socket", socket, *extra])
    procs.readline_until(p, f"paam bridge '{name}' ready", 30)
    p.bridge_name = name
    return p


@pytest.fixture(scope="module")
def server():
    with paam.testing.start_server(buckets=1) as srv:
        yield srv


@pytest.fixture(scope="module")
def bridge(server):
    procs = Procs()
    try:
        yield _start_bridge(procs, server.socket_path).bridge_name
    finally:
        procs.cleanup()


class StatusWatcher:
    """Follows a bridge's ServerStatus topic from a context of its own."""

    def __init__(self, bridge_name: str) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        from paam.ros import wire
        from paam_msgs.msg import ServerStatus

        self.ctx = Context()
        rclpy.init(context=self.ctx, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
        self.node = rclpy.create_node(f"status_probe_{uuid.uuid4().hex[:6]}", context=self.ctx)
        self.seen: list = []
        self.node.create_subscription(ServerStatus, wire.topic(bridge_name, "status"),
                                      self.seen.append, wire.status_qos())
        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)
        self.name = bridge_name

    def wait(self, predicate, timeout_sec: float):
        """The first status (from now on) that satisfies ``predicate``."""
        self.seen.clear()
        deadline = time.monotonic() + timeout_sec
        while time.monotonic() < deadline:
            self.ex.spin_once(timeout_sec=0.2)
            for msg in self.seen:
                if predicate(msg):
                    return msg
            self.seen.clear()
        raise AssertionError(f"no matching status from {self.name} within {timeout_sec}s")

    def close(self) -> None:
        import rclpy
        self.ex.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)


def test_remote_client_registers_requests_and_gets_results_through_the_bridge(bridge):
    from paam.ros import RemoteClient

    with RemoteClient(priority=7, kernels=["vector_add", "spin"], bridge=bridge,
                      connect_timeout_sec=20) as c:
        assert c.priority == 7 and c.bucket == 0
        assert "best-effort" in c.admission_note or "admitted" in c.admission_note
        a = np.arange(1000, dtype=np.float32)
        b = np.full(1000, 0.5, dtype=np.float32)
        out = c.request("vector_add", a, b)
        assert out.dtype == np.float32 and out.shape == (1000,)
        np.testing.assert_array_equal(out, a + b)

        device_ms = c.request("spin", duration_ms=5.0)
        assert isinstance(device_ms, float) and device_ms >= 5.0
        ts = c.last_timestamps
        for stage in ("submitted", "device_start", "device_end", "bridge_received",
                      "bridge_replied", "remote_sent", "remote_received"):
            assert stage in ts, stage
        assert ts["device_end"] - ts["device_start"] >= 5_000_000
        assert ts["bridge_received"] <= ts["submitted"] <= ts["device_start"]

        fut = c.submit("spin", duration_ms=300.0)  # (300 ms of device time: not done yet)
        assert not fut.done()
        assert fut.result(timeout_sec=30) >= 300.0 and fut.done()


def test_remote_errors_are_the_local_clients_errors(bridge):
    from paam.ros import RemoteClient

    with RemoteClient(priority=3, kernels=["vector_add", "spin"], bridge=bridge,
                      connect_timeout_sec=20) as c:
        with pytest.raises(paam.UnknownKernel):
            c.request("matmul", np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))
        with pytest.raises(paam.PaamError, match="equal shapes") as info:
            c.request("vector_add", np.ones(3, np.float32), np.ones(4, np.float32))
        assert info.value.code == "invalid_argument"
        # Not done yet: no wait. A 300 ms kernel cannot be done yet (a short one's response
        # may already have come back through the bridge).
        fut = c.submit("spin", duration_ms=300.0)
        with pytest.raises(paam.PaamTimeout):
            fut.result(timeout_sec=0)
        assert fut.result(timeout_sec=10) >= 300.0
        fut = c.submit("vector_add", np.ones(3, np.float32), np.ones(3, np.float32))
        # Done: the response has arrived (not yet taken); timeout_sec=0 returns it, as
        # paam.Client's result(0) does once done() holds.
        wait_until_ready(c._hub.context, [c._sub], 10)
        np.testing.assert_array_equal(fut.result(timeout_sec=0), np.full(3, 2.0))
        fut = c.submit("vector_add", np.ones(3, np.float32), np.ones(3, np.float32))
        deadline = time.monotonic() + 10
        while not fut.done() and time.monotonic() < deadline:
            time.sleep(0.005)
        np.testing.assert_array_equal(fut.result(timeout_sec=0), np.full(3, 2.0))
    with pytest.raises(paam.PaamError):
        c.request("vector_add", np.ones(3), np.ones(3))  # closed


def test_bridge_submits_at_the_remote_chains_registered_priority(server, bridge):
    """With the device busy, a high-priority remote request queued after a low-priority one
    still runs first: the bridge registered each remote chain at its own priority.

    What is compared needs both remote requests waiting in paamd while a local blocker holds
    its one bucket, low submitted before high. The stamps (one CLOCK_MONOTONIC) show whether a
    round had that; a machine too slow for it gets a longer blocker and another round."""
    from paam.ros import RemoteClient

    blocker = paam.Client(priority=1, kernels=["spin"], socket=server.socket_path)
    low = RemoteClient(priority=2, kernels=["spin"], bridge=bridge, connect_timeout_sec=20)
    high = RemoteClient(priority=9, kernels=["spin"], bridge=bridge, connect_timeout_sec=20)
    rounds = []
    try:
        for block_ms in (500.0, 2000.0, 8000.0):
            busy = blocker.submit("spin", duration_ms=block_ms)
            time.sleep(0.05)
            f_low = low.submit("spin", duration_ms=30.0)
            time.sleep(block_ms / 5000)  # the low request gets to paamd before the high one
            f_high = high.submit("spin", duration_ms=30.0)
            for f in (busy, f_low, f_high):
                f.result(timeout_sec=60)
            freed = blocker.last_timestamps["device_end"]
            lo, hi = low.last_timestamps, high.last_timestamps
            rounds.append((block_ms, lo["submitted"], hi["submitted"], freed))
            # both queued: low first, and high 50 ms (a wide margin for paamd to see it) before
            # the device was free
            if lo["submitted"] < hi["submitted"] < freed - 50_000_000:
                assert hi["device_start"] < lo["device_start"], rounds
                return
        pytest.fail(f"no round had both requests queued behind the blocker: {rounds}")
    finally:
        low.close()
        high.close()
        blocker.close()


# A remote client in its own process: registers, sends one request, says so, then waits to be
# killed (it never unregisters).
VANISHING_CLIENT = r"""
import sys
from paam.ros import RemoteClient
c = RemoteClient(priority=4, kernels=["spin"], bridge=sys.argv[1], connect_timeout_sec=20)
c.request("spin", duration_ms=1.0)
print("REGISTERED", c.client_id, flush=True)
sys.stdin.read()
"""


def test_bridge_reaps_a_remote_client_that_vanishes_and_keeps_serving(server, procs):
    from paam.ros import RemoteClient

    # (a lease that a busy machine's heartbeats keep: only the killed client is silent)
    name = _start_bridge(procs, server.socket_path, "--lease", "2.0").bridge_name
    status = StatusWatcher(name)
    try:
        victim = procs.python(VANISHING_CLIENT, name)
        procs.readline_until(victim, "REGISTERED", 30)
        status.wait(lambda m: m.remote_clients == 1, 30)
        procs.kill(victim, signal.SIGKILL)
        last = status.wait(lambda m: m.remote_clients == 0, 30)
        assert last.clients_reaped == 1 and last.server_reachable
    finally:
        status.close()
    with RemoteClient(priority=5, kernels=["spin"], bridge=name, connect_timeout_sec=20) as c:
        assert c.request("spin", duration_ms=1.0) >= 1.0


def test_no_bridge_is_a_clear_error_within_the_timeout():
    from paam.ros import RemoteClient
    from paam.ros.remote import BridgeNotRunning

    t0 = time.monotonic()
    with pytest.raises(paam.ServerNotRunning, match="no paam bridge 'nobody_here'") as info:
        RemoteClient(priority=1, kernels=["spin"], bridge="nobody_here", connect_timeout_sec=1.5)
    assert isinstance(info.value, BridgeNotRunning)
    assert time.monotonic() - t0 < 20  # no hang: the 1.5 s timeout holds (a generous bound)


def test_no_server_behind_the_bridge_is_server_not_running(procs, tmp_path):
    from paam.ros import RemoteClient

    name = _start_bridge(procs, str(tmp_path / "nothing.sock")).bridge_name
    watcher = StatusWatcher(name)
    try:
        status = watcher.wait(lambda m: True, 10)
    finally:
        watcher.close()
    assert not status.server_reachable and "not reachable" in status.message
    with pytest.raises(paam.ServerNotRunning) as info:
        RemoteClient(priority=1, kernels=["spin"], bridge=name, connect_timeout_sec=20)
    assert type(info.value).__name__ == "ServerNotRunning"


def test_a_bridge_that_dies_mid_request_is_server_died_not_a_hang(server, procs):
    from paam.ros import RemoteClient

    p = _start_bridge(procs, server.socket_path)
    c = RemoteClient(priority=6, kernels=["spin"], bridge=p.bridge_name, connect_timeout_sec=20,
                     bridge_timeout_sec=2.0)
    try:
        assert c.request("spin", duration_ms=1.0) >= 1.0
        fut = c.submit("spin", duration_ms=3000.0)
        time.sleep(0.2)
        procs.kill(p, signal.SIGKILL)
        t0 = time.monotonic()
        with pytest.raises(paam.ServerDied, match="silent"):  # not PaamTimeout: no hang
            fut.result(timeout_sec=60)
        assert time.monotonic() - t0 < 30  # bridge_timeout_sec is 2 s (a generous bound)
    finally:
        c.close()


RETIRED = "the bridge retired this client: its heartbeats stopped for longer than the lease"


def test_a_live_client_the_bridge_retired_gets_a_clear_error_not_a_hang(server, procs):
    """A client whose heartbeats paused past the lease (process alive) is retired by the bridge;
    the bridge tells it so, and its pending and new requests raise ClientRetired (a ServerDied),
    not PaamTimeout after the caller's timeout, nor a hang without one."""
    from paam.ros import RemoteClient
    from paam.ros.remote import ClientRetired

    # A lease that a busy machine's heartbeats keep until they are paused, and a pending kernel
    # that outlasts it (and the reaper's period) several times over: the notice comes first.
    p = _start_bridge(procs, server.socket_path, "--lease", "1.5")
    busy = RemoteClient(priority=4, kernels=["spin"], bridge=p.bridge_name,
                        connect_timeout_sec=20)
    idle = RemoteClient(priority=5, kernels=["spin"], bridge=p.bridge_name,
                        connect_timeout_sec=20)
    try:
        assert busy.request("spin", duration_ms=1.0) >= 1.0
        assert idle.request("spin", duration_ms=1.0) >= 1.0
        pending = busy.submit("spin", duration_ms=8000.0)
        for c in (busy, idle):
            c._hb_timer.cancel()   # the processes live on; their heartbeats pause
        ids, retired = {busy.client_id, idle.client_id}, set()

        def both_retired(text: str) -> bool:
            retired.update(i for i in ids if f"client {i} " in text and "retired" in text)
            return retired == ids
        assert read_line_until(p, both_retired, 60) is not None, p.seen_lines
        for c in (busy, idle):
            c._hb_timer.reset()    # heartbeats resume: the bridge no longer knows the id

        # ClientRetired, not PaamTimeout: the notice ended the wait, not the timeout
        with pytest.raises(paam.ServerDied, match=RETIRED) as info:
            pending.result(timeout_sec=60)
        assert isinstance(info.value, ClientRetired) and info.value.code == "client_retired"
        with pytest.raises(ClientRetired, match=RETIRED):
            idle.request("spin", duration_ms=1.0, timeout_sec=60)
        for c in (busy, idle):
            t0 = time.monotonic()
            with pytest.raises(ClientRetired, match=RETIRED):
                c.request("spin", duration_ms=1.0)   # no timeout: raises at once, no hang
            assert time.monotonic() - t0 < 10  # (a generous bound: it does not wait at all)
            assert c.retired and not c.closed
    finally:
        busy.close()
        idle.close()
    # The bridge keeps serving new registrations.
    with RemoteClient(priority=6, kernels=["spin"], bridge=p.bridge_name,
                      connect_timeout_sec=20) as c:
        assert c.request("spin", duration_ms=1.0) >= 1.0


def test_a_restarted_bridge_tells_an_old_client_it_is_not_registered(server, procs):
    """A bridge that restarted under the same name does not know the old client's id: the
    client's next request raises ClientRetired within a few seconds instead of timing out."""
    from paam.ros import RemoteClient
    from paam.ros.remote import ClientRetired

    first = _start_bridge(procs, server.socket_path)
    name = first.bridge_name
    # A generous bridge_timeout_sec: the new bridge's status must not be late (a loaded machine's
    # discovery) for what is tested here.
    c = RemoteClient(priority=6, kernels=["spin"], bridge=name, connect_timeout_sec=20,
                     bridge_timeout_sec=30)
    try:
        assert c.request("spin", duration_ms=1.0) >= 1.0
        procs.kill(first, signal.SIGKILL)
        second = _start_bridge(procs, server.socket_path, name=name)
        # ClientRetired, not PaamTimeout: the new bridge's notice ended the wait
        with pytest.raises(ClientRetired, match="no registration"):
            c.request("spin", duration_ms=1.0, timeout_sec=60)
        assert read_line_until(second, lambda t: f"unknown client {c.client_id}" in t, 30)
    finally:
        c.close()


def test_remote_client_works_from_inside_an_executor_callback(bridge, ros_context):
    """A RemoteClient has its own ROS 2 context, so a callback of the application's executor can
    use it synchronously without deadlocking that executor."""
    import rclpy

    from paam.ros import PicasExecutor, RemoteClient

    node = rclpy.create_node(f"app_{uuid.uuid4().hex[:6]}", context=ros_context)
    results = []
    c = RemoteClient(priority=8, kernels=["spin"], bridge=bridge, connect_timeout_sec=20)
    timer = None

    def on_timer():
        timer.cancel()
        results.append(c.request("spin", duration_ms=2.0))
    timer = node.create_timer(0.01, on_timer)
    ex = PicasExecutor(context=ros_context)
    ex.add_node(node)
    spin_until(ex, lambda: results, 20, 0.5)
    c.close()
    ex.shutdown()
    node.destroy_node()
    assert results and results[0] >= 2.0


def test_admission_through_the_bridge_refuses_a_missing_chain_and_admits_it_best_effort(procs):
    """A remote chain's timing model crosses the bridge whole, best_effort included: declared
    critical, a chain whose 10 ms segment cannot meet its 5 ms deadline is refused (NotAdmitted,
    naming the chain); declared best-effort, the same chain is admitted."""
    from paam.ros import CallbackSpec, Chain

    def chain(best_effort: bool) -> Chain:
        return Chain("be", priority=9, period_ms=100, deadline_ms=5, executor="ex1",
                     executor_cpu=0, executor_priority=90, best_effort=best_effort,
                     callbacks=[CallbackSpec("b1", cpu_wcet_ms=1, segments_ms=[10],
                                             kernels=["spin"])])

    with paam.testing.start_server(admission="analysis", device_cpu=-2) as srv:
        name = _start_bridge(procs, srv.socket_path).bridge_name
        with pytest.raises(paam.NotAdmitted, match="'be'"):
            chain(False).remote_client("b1", bridge=name, connect_timeout_sec=20)
        with chain(True).remote_client("b1", bridge=name, connect_timeout_sec=20) as c:
            assert "admitted" in c.admission_note
            assert c.request("spin", duration_ms=1) >= 1.0
