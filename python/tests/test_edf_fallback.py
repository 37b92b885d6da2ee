"""paamd --queue edf and --fallback from Python: a bucket served by deadline (the client's
relative deadline and its jobs' release), the refusal of the analysis with EDF, and where each
request ran (paam.Client.ran_on / fallback, and a Future's)."""
import subprocess
import time

import pytest

import paam
from paam.testing import find_paamd, start_server


def _start_order(blocker, clients, releases_before=()):
    """Each client's tiny spin, submitted 3 ms apart while ``blocker`` holds the bucket's only
    worker; the indices in the order their kernels started, or None if a busy machine let a
    request reach paamd after the blocker ended (then the caller tries a longer blocker)."""
    for block_ms in (300, 600, 1200, 2400):
        held = blocker.submit("spin", duration_ms=block_ms)
        time.sleep(0.03)
        futures = []
        for i, c in enumerate(clients):
            before = releases_before[i] if i < len(releases_before) else 0
            c.release_ns = time.monotonic_ns() - before if before else 0
            futures.append(c.submit("spin", duration_ms=0.1))
            time.sleep(0.003)
        held.result()
        b = blocker.timestamps("spin")
        for f in futures:
            f.result()
        stamps = [c.timestamps("spin") for c in clients]
        if all(b["device_start"] < t["dequeued"] < b["device_end"] for t in stamps):
            return sorted(range(len(clients)), key=lambda i: stamps[i]["device_start"])
    pytest.fail("no round queued every request while the blocker ran")


def test_edf_serves_a_bucket_by_deadline_and_release():
    with start_server(buckets=1, device_cpu=-2, extra_args=["--queue", "edf"]) as srv:
        with paam.Client(priority=100, kernels=["spin"], socket=srv.socket_path) as blocker:
            specs = [(9, 400.0), (1, 50.0), (5, 0.0), (7, 100.0)]
            clients = [paam.Client(priority=p, kernels=["spin"], socket=srv.socket_path, deadline_ms=d)
                       for p, d in specs]
            try:
                # deadlines: 1 (50 ms), 3 (100 ms), 0 (400 ms); then 2, which has none
                assert _start_order(blocker, clients) == [1, 3, 0, 2]
                # the same deadline everywhere: the job released 80 ms before its submission
                # goes first, then by release
                same = [paam.Client(priority=5, kernels=["spin"], socket=srv.socket_path, deadline_ms=100)
                        for _ in range(3)]
                try:
                    assert _start_order(blocker, same, [10_000_000, 0, 80_000_000]) == [2, 0, 1]
                finally:
                    for c in same:
                        c.close()
            finally:
                for c in clients:
                    c.close()


def test_release_ns_is_checked_and_kept():
    with start_server(buckets=1, device_cpu=-2) as srv:
        with paam.Client(priority=1, kernels=["spin"], socket=srv.socket_path, deadline_ms=5) as c:
            assert c.release_ns == 0
            now = time.monotonic_ns()
            c.release_ns = now
            assert c.release_ns == now
            with pytest.raises(paam.errors.InvalidArgument, match="release_ns"):
                c.release_ns = -1
            assert c.request("spin", duration_ms=0.1) >= 0.1


def test_a_nonsense_deadline_is_refused_at_registration():
    with start_server(buckets=1, device_cpu=-2) as srv:
        with pytest.raises(paam.errors.InvalidArgument, match="deadline_ms must be 0"):
            paam.Client(priority=1, kernels=["spin"], socket=srv.socket_path, deadline_ms=-3)


def test_paamd_refuses_the_analysis_with_edf():
    r = subprocess.run([find_paamd(), "--queue", "edf", "--admission", "analysis"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "--queue edf cannot be combined with --admission analysis" in r.stderr
    assert "gives no bound" in r.stderr
    r = subprocess.run([find_paamd(), "--queue", "deadline"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--queue must be fifo or edf, got 'deadline'" in r.stderr
    r = subprocess.run([find_paamd(), "--fallback", "gpu"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--fallback must be off or cpu-on-overload, got 'gpu'" in r.stderr


def test_every_result_says_where_it_ran(server):
    with paam.Client(priority=1, kernels=["spin"], socket=server.socket_path) as c:
        assert c.ran_on("spin") is None
        c.request("spin", duration_ms=0.1)
        assert c.ran_on("spin") == "cpu" and c.fallback("spin") is False
        fut = c.submit("spin", duration_ms=0.1)
        assert fut.ran_on is None
        fut.result()
        assert fut.ran_on == "cpu" and fut.fallback is False
        with pytest.raises(paam.errors.InvalidArgument):
            c.request("spin", duration_ms=120_000)  # refused by the kernel's plan: never ran
        assert c.ran_on("spin") is None


def test_the_fallback_runs_the_cpu_version_when_the_bucket_is_held():
    with start_server(buckets=1, device_cpu=-2, extra_args=["--fallback", "cpu-on-overload"]) as srv:
        with (paam.Client(priority=5, kernels=["spin"], socket=srv.socket_path, deadline_ms=20) as urgent,
              paam.Client(priority=5, kernels=["spin"], socket=srv.socket_path) as blocker):
            urgent.request("spin", duration_ms=1)       # the bucket's first device time
            blocker.request("spin", duration_ms=300)    # its recent mean now says "long"
            assert urgent.fallback("spin") is False and blocker.fallback("spin") is False
            held = blocker.submit("spin", duration_ms=300)
            time.sleep(0.02)
            fut = urgent.submit("spin", duration_ms=1)
            fut.result()
            held.result()
            assert fut.ran_on == "cpu" and fut.fallback is True
            assert urgent.fallback("spin") is True
            assert held.fallback is False
            assert urgent.timestamps("spin")["device_start"] < blocker.timestamps("spin")["device_end"]
