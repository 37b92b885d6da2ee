"""paam.observe against a real paamd: statistics and traces of requests the test sends itself."""
from __future__ import annotations

import os
import threading
import time

import pytest

import paam
from paam import observe


def spin(client: paam.Client, n: int, ns: int = 1000) -> None:
    for _ in range(n):
        client.request("spin", duration_ns=ns)


def by_name(snap: dict, name: str) -> dict:
    matches = [c for c in snap["clients"] if c["name"] == name]
    assert len(matches) == 1, snap["clients"]
    return matches[0]


def test_stats_count_every_request_per_client_and_lane(server2):
    with paam.Client(priority=9, kernels=["spin"], name="hi", socket=server2.socket_path) as hi, \
         paam.Client(priority=2, kernels=["spin"], name="lo", socket=server2.socket_path) as lo:
        spin(hi, 12)
        spin(lo, 7)
        snap = observe.stats(server2.socket_path)
    assert snap["server"]["pid"] == server2.pid
    assert snap["server"]["uid"] == os.geteuid()
    assert snap["server"]["buckets"] == 2
    assert snap["server"]["socket"] == server2.socket_path
    assert snap["totals"]["requests_completed"] == 19
    assert snap["totals"]["active_clients"] == 2
    assert [c["name"] for c in snap["clients"]] == ["hi", "lo"]  # most urgent first
    h, low = by_name(snap, "hi"), by_name(snap, "lo")
    assert (h["requests"], low["requests"]) == (12, 7)
    assert (h["bucket"], low["bucket"]) == (0, 1)
    assert (h["priority"], h["pid"], h["failed"], h["violations"]) == (9, os.getpid(), 0, 0)
    assert h["latency_us"]["n"] == 12 and h["latency_us"]["p50"] <= h["latency_us"]["max"]
    assert h["bound_ms"] is None and h["timed"] is False
    served = {0: 0, 1: 0}
    for lane in snap["lanes"]:
        served[lane["bucket"]] += lane["served"]
        assert lane["stages_us"]["total"]["n"] == lane["served"]
        assert 0.0 <= lane["busy_share"] <= 1.0
    assert served == {0: 12, 1: 7}
    assert snap["overheads"]["epsilon_ms"]["used"] is None  # no analysis
    assert snap["violations_total"] == 0


def test_trace_holds_each_clients_requests_in_order_with_ordered_stamps(server2):
    with paam.Client(priority=9, kernels=["spin"], name="cam", socket=server2.socket_path) as cam, \
         paam.Client(priority=2, kernels=["spin"], name="lidar", socket=server2.socket_path) as lidar:
        ids = {"cam": cam.client_id, "lidar": lidar.client_id}
        spin(cam, 3)  # before the trace: not in it
        with observe.Trace(server2.socket_path, capacity=4096) as trace:
            other = threading.Thread(target=spin, args=(lidar, 25))
            other.start()
            spin(cam, 25)
            other.join()
            records = trace.read()
            assert trace.read() == []  # drained
            assert trace.dropped == 0
            trace.stop()
            spin(cam, 5)
            assert trace.read() == []  # stopped: nothing more is recorded
    assert len(records) == 50
    for name, client_id in ids.items():
        mine = [r for r in records if r["client"] == client_id]
        assert len(mine) == 25
        assert all(r["client_name"] == name and r["kernel"] == "spin" and r["status"] == "ok" for r in mine)
        assert all(r["pid"] == os.getpid() for r in mine)
        assert [r["sequence"] for r in mine] == list(range(mine[0]["sequence"], mine[0]["sequence"] + 25))
        for r in mine:
            stamps = [r[k] for k in ("submitted", "dequeued", "picked", "device_start", "device_end", "completed")]
            assert stamps == sorted(stamps), r
    cam_records = [r for r in records if r["client"] == ids["cam"]]
    assert cam_records[0]["sequence"] == 4  # the three before the trace are not in it
    assert {r["bucket"] for r in cam_records} == {0}
    assert [r["completed"] for r in records] == sorted(r["completed"] for r in records)


def test_one_trace_at_a_time_and_clear_errors(server, tmp_path):
    with pytest.raises(paam.ServerNotRunning):
        observe.stats(str(tmp_path / "nobody.sock"))
    with observe.Trace(server.socket_path) as first:
        with pytest.raises(paam.errors.Busy, match="one at a time"):
            observe.Trace(server.socket_path).start()
        first.read()
    unstarted = observe.Trace(server.socket_path)
    with pytest.raises(paam.errors.InvalidArgument, match="no trace was started"):
        unstarted.read()
    unstarted.close()
    with pytest.raises(ValueError):
        observe.Trace(server.socket_path, capacity=0)


def test_a_tool_polling_slower_than_the_registration_timeout_keeps_its_connection():
    with paam.testing.start_server(device_cpu=-2, extra_args=["--registration-timeout-ms", "200"]) as srv:
        with observe.Trace(srv.socket_path) as trace, \
             paam.Client(priority=1, kernels=["spin"], socket=srv.socket_path) as c:
            time.sleep(0.6)
            spin(c, 2)
            assert len(trace.read()) == 2
        assert observe.stats(srv.socket_path)["totals"]["connections_dropped"] == 0


def test_bound_monitor_counts_requests_over_the_analysed_bound():
    # Three buckets: the lowest is kept for clients without a timing model, and the chain gets
    # one of its own. It declares 1 ms and runs 20 ms: every request breaks the bound
    # A + epsilon = 1.05 ms.
    with paam.testing.start_server(admission="analysis", buckets=3, device_cpu=-2,
                                   extra_args=["--overhead-ms", "0.05"]) as srv:
        timing = paam.TimingModel(chain="fast", period_ms=1000.0, cpu_wcet_ms=0.1, segments_ms=[1.0],
                                  executor="ex0", executor_cpu=0, executor_priority=50)
        with paam.Client(priority=5, kernels=["spin"], name="liar", socket=srv.socket_path,
                         timing=timing) as liar:
            for _ in range(2):
                liar.request("spin", duration_ms=20)
            snap = observe.stats(srv.socket_path)
        c = by_name(snap, "liar")
        assert c["timed"] is True
        assert c["bound_ms"] == pytest.approx(1.05, abs=1e-6)
        assert c["violations"] == 2 and snap["violations_total"] == 2
        assert c["worst_observed_ms"] >= 20.0
        assert snap["overheads"]["epsilon_ms"]["used"] == pytest.approx(0.05)
        assert snap["overheads"]["epsilon_ms"]["observed_p99"] > 0
        # The first violation is logged with its numbers, once.
        deadline = time.monotonic() + 5
        while "bound monitor" not in srv.log() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert srv.log().count("bound monitor: client") == 1
        assert "over the 1.050 ms" in srv.log()
