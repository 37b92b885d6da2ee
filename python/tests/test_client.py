"""The Python client against a real paamd: kernels, wait modes, async, errors, direct mode."""
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import paam

ALL = ["vector_add", "matmul", "reduction", "histogram", "spin"]


def _check_kernels(c: paam.Client, rng: np.random.Generator) -> None:
    a, b = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(c.request("vector_add", a, b), a + b)
    A, B = rng.standard_normal((17, 9)).astype(np.float32), rng.standard_normal((9, 5)).astype(np.float32)
    np.testing.assert_allclose(c.request("matmul", A, B), A @ B, rtol=1e-5, atol=1e-5)
    x = rng.standard_normal(5000).astype(np.float32)
    assert c.request("reduction", x) == pytest.approx(float(x.astype(np.float64).sum()), abs=1e-3)
    data = rng.integers(0, 256, 10_000, dtype=np.uint8)
    np.testing.assert_array_equal(c.request("histogram", data), np.bincount(data, minlength=256))
    assert c.request("spin", duration_ms=2.0) >= 2.0


@pytest.mark.parametrize("wait", ["spin", "suspend", "hybrid"])
def test_every_kernel_matches_numpy_in_every_wait_mode(server, wait):
    with paam.Client(priority=3, kernels=ALL, wait=wait, socket=server.socket_path) as c:
        _check_kernels(c, np.random.default_rng(7))
        ts = c.timestamps("spin")
        order = ["submitted", "dequeued", "picked", "device_start", "device_end", "completed", "woken"]
        assert [ts[k] for k in order] == sorted(ts[k] for k in order)


def test_direct_mode_gives_the_same_results_without_a_server(tmp_path):
    with paam.Client(priority=3, kernels=ALL, direct=True, device_cpu=-2,
                     socket=str(tmp_path / "nobody.sock")) as c:
        assert c.direct
        assert "direct mode" in c.admission_note
        _check_kernels(c, np.random.default_rng(8))


@pytest.mark.parametrize("wait", ["spin", "suspend", "hybrid"])
def test_submit_returns_at_once_and_result_collects_later(server, wait):
    with paam.Client(priority=3, kernels=["spin"], wait=wait, socket=server.socket_path) as c:
        t0 = paam._core.now_ns()
        fut = c.submit("spin", duration_ms=30)
        assert paam._core.now_ns() - t0 < 20e6
        assert not fut.done()
        with pytest.raises(paam.Busy):
            c.submit("spin", duration_ms=1)
        with pytest.raises(paam.PaamTimeout):
            fut.result(timeout_sec=0.001)
        assert fut.result(timeout_sec=10) >= 30.0
        assert fut.done()


def test_clear_errors(server, tmp_path):
    with pytest.raises(paam.ServerNotRunning, match="nobody.sock"):
        paam.Client(kernels=["spin"], socket=str(tmp_path / "nobody.sock"))
    with pytest.raises(paam.UnknownKernel, match="vector_add"):  # lists the kernels that exist
        paam.Client(kernels=["warp_drive"], socket=server.socket_path)
    with paam.Client(kernels={"vector_add": 64}, socket=server.socket_path) as c:
        with pytest.raises(paam.InputTooLarge, match="64"):
            c.request("vector_add", np.ones(100), np.ones(100))
        with pytest.raises(paam.UnknownKernel, match="not declared"):
            c.request("matmul", np.ones((2, 2)), np.ones((2, 2)))
        with pytest.raises(paam.errors.InvalidArgument):
            c.request("vector_add", np.ones(3), np.ones(4))
        np.testing.assert_array_equal(c.request("vector_add", [1, 2], [3, 4]), [4, 6])  # still fine
    with pytest.raises(paam.errors.Closed):
        c.request("vector_add", [1], [2])


def test_zero_copy_input_buffer_and_raw_requests(server):
    with paam.Client(kernels={"vector_add": 4096}, socket=server.socket_path) as c:
        buf = c.input_buffer("vector_add")
        buf[:16].view(np.float32)[:] = [1, 2, 3, 4]
        buf[16:32].view(np.float32)[:] = [10, 20, 30, 40]
        out = c.request_raw("vector_add", 32, params=[4])
        np.testing.assert_array_equal(out.view(np.float32), [11, 22, 33, 44])


# Run in a fresh interpreter: the failure it guards against is a segmentation fault, which
# would take pytest down with it.
_VIEWS_AFTER_CLOSE = textwrap.dedent("""
    import gc, sys
    import numpy as np
    import paam

    def region_mappings():
        with open("/proc/self/maps") as f:
            return sum("paam-region" in line for line in f)

    socket = sys.argv[1]
    kw = {"socket": socket} if socket else {"direct": True, "device_cpu": -2, "socket": "/nonexistent"}
    c = paam.Client(kernels={"vector_add": 1 << 20}, **kw)  # large: direct mode's buffers are mmapped
    buf = c.input_buffer("vector_add")
    buf[:16].view(np.float32)[:] = [1, 2, 3, 4]
    buf[16:32].view(np.float32)[:] = [10, 20, 30, 40]
    np.testing.assert_array_equal(c.request_raw("vector_add", 32, params=[4]).view(np.float32), [11, 22, 33, 44])
    out = c._native.output_view(0)
    c.close()
    assert c.closed
    try:
        c.request_raw("vector_add", 32, params=[4])
    except paam.errors.Closed:
        pass
    else:
        raise AssertionError("a request after close() did not raise Closed")
    try:
        c.input_buffer("vector_add")
    except paam.errors.Closed:
        pass
    else:
        raise AssertionError("input_buffer() after close() did not raise Closed")
    buf[:] = 7                      # still memory: no segmentation fault
    assert int(buf[-1]) == 7 and int(buf.sum()) == 7 * buf.size
    assert out[:16].view(np.float32).tolist() == [11, 22, 33, 44]
    if socket:
        assert region_mappings() > 0
    del c
    gc.collect()
    buf[0] = 1                      # the arrays outlive the paam.Client too
    del buf, out
    gc.collect()
    if socket:
        assert region_mappings() == 0, "the last array is gone but the regions stay mapped"
""")


@pytest.mark.parametrize("mode", ["server", "direct"])
def test_input_buffer_stays_memory_after_close(server, mode):
    # An array from input_buffer() kept past close() used to point into unmapped memory, so
    # touching it crashed the process; now it keeps the mapping until it is gone.
    socket = server.socket_path if mode == "server" else ""
    r = subprocess.run([sys.executable, "-c", _VIEWS_AFTER_CLOSE, socket], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, f"exit code {r.returncode}\n{r.stdout}\n{r.stderr}"
    with paam.Client(kernels=["vector_add"], socket=server.socket_path) as c:  # the server still serves
        np.testing.assert_array_equal(c.request("vector_add", [1, 2], [3, 4]), [4, 6])


def test_priority_and_bucket_come_from_registration(server2):
    with paam.Client(priority=9, kernels=["spin"], socket=server2.socket_path) as hi, \
         paam.Client(priority=2, kernels=["spin"], socket=server2.socket_path) as lo:
        assert (hi.bucket, lo.bucket) == (0, 1)
        assert hi.buckets == 2
        assert "admission control is off" in hi.admission_note


def test_admission_control_refuses_the_registration_that_breaks_a_chain():
    # Two buckets: the lowest is kept for clients without a timing model, the analysed chains
    # share the one above it.
    with paam.testing.start_server(admission="analysis", buckets=2, device_cpu=-2,
                                   extra_args=["--overhead-ms", "0.05"]) as srv:
        def timing(chain, prio_cpu, seg, executor):
            return paam.TimingModel(chain=chain, period_ms=20.0, deadline_ms=20.0, cpu_wcet_ms=1.0,
                                    segments_ms=[seg], executor=executor, executor_cpu=prio_cpu,
                                    executor_priority=90 - prio_cpu)
        with paam.Client(priority=1, kernels=["spin"], socket=srv.socket_path,
                         timing=timing("slow", 0, 12.0, "ex0")) as slow:
            assert "admitted" in slow.admission_note
            # A more critical chain fits itself (1 + 6 + 12 blocking = 19.05 ms <= 20) but its
            # segments, twice per window with the carry-in, push 'slow' to 1 + 12 + 2*6 > 20 ms.
            with pytest.raises(paam.NotAdmitted, match="slow") as err:
                paam.Client(priority=5, kernels=["spin"], socket=srv.socket_path,
                            timing=timing("fast", 1, 6.0, "ex1"))
            assert "miss" in str(err.value)
            # A light one fits, and a client without a timing model is best-effort.
            with paam.Client(priority=5, kernels=["spin"], socket=srv.socket_path,
                             timing=timing("light", 1, 1.0, "ex1")) as light:
                assert light.request("spin", duration_ms=1) >= 1.0
                # A client without a timing model goes to the lowest bucket, whatever its
                # priority, and the analysed chains keep theirs.
                with paam.Client(priority=9, kernels=["spin"], socket=srv.socket_path) as be:
                    assert "best-effort into the lowest bucket" in be.admission_note
                    assert (be.bucket, light.bucket, slow.bucket) == (1, 0, 0)
                    assert be.request("spin", duration_ms=1) >= 1.0


def test_admission_by_analysis_with_one_bucket_refuses_clients_without_a_timing_model():
    with paam.testing.start_server(admission="analysis", buckets=1, device_cpu=-2) as srv:
        with pytest.raises(paam.NotAdmitted, match="--buckets 2"):
            paam.Client(priority=1, kernels=["spin"], socket=srv.socket_path)


def _until(ready, timeout_sec: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_sec
    while not ready():
        assert time.monotonic() < deadline, "the other thread's request never got in flight"
        time.sleep(0.001)


@pytest.mark.parametrize("wait", ["spin", "suspend"])
@pytest.mark.parametrize("how", ["request", "future"])
def test_close_from_another_thread_waits_for_the_request_in_flight(server, wait, how):
    # A client closed while another thread waits for its request (an executor shutting down
    # under a callback): close() waits for that request, which returns its result, and later
    # requests get Closed. Closing under it used to unmap the request's shared memory and free
    # the client beneath the waiting thread (a segmentation fault).
    for _ in range(3):
        c = paam.Client(priority=3, kernels=["spin"], wait=wait, socket=server.socket_path)
        got: list = []
        t0 = time.monotonic()  # before the request starts: a Future's kernel runs from submit()
        if how == "request":
            work = lambda: got.append(c.request("spin", duration_ms=150))  # noqa: E731
        else:
            fut = c.submit("spin", duration_ms=150)
            work = lambda: got.append(fut.result())  # noqa: E731
        t = threading.Thread(target=work)
        t.start()
        _until(lambda: c._gate._busy)  # the other thread is inside request() / result()
        c.close()
        assert time.monotonic() - t0 >= 0.15, "close() returned under the request in flight"
        t.join(5)
        assert got and got[0] >= 150
        assert c.closed
        with pytest.raises(paam.errors.Closed):
            c.request("spin", duration_ms=1)
        c.close()  # idempotent


def test_the_native_client_closed_under_a_native_call_waits_for_it(server):
    # The thin native layer too (paam._core, used by benchmarks): no crash, close() waits.
    c = paam.Client(priority=3, kernels=["spin"], socket=server.socket_path)
    native, k = c._native, 0
    nbytes, p, _ = paam.kernels.spec_for("spin").pack(native.input_view(k), duration_ms=150)
    got: list = []
    t0 = time.monotonic()
    t = threading.Thread(target=lambda: got.append(native.call(k, nbytes, p, 0)))
    t.start()
    _until(lambda: native.outstanding(k))  # submitted: the call waits for it
    native.close()
    assert time.monotonic() - t0 >= 0.15
    t.join(5)
    assert got and native.closed
    with pytest.raises(paam.errors.Closed):
        native.call(k, nbytes, p, 0)


# --- Cancellation: a request's time limit, the server's cap, a client that goes away ---------
# Bounds are loose (a busy 2-core machine): what matters is "well before the 20 s spin ends".

def test_a_timeout_also_stops_the_request_on_the_server(server):
    with paam.Client(priority=1, kernels=["spin"], socket=server.socket_path) as slow, \
         paam.Client(priority=100, kernels=["spin"], socket=server.socket_path) as urgent:
        errors: list = []
        t0 = time.monotonic()

        def run_slow():
            try:
                slow.request("spin", duration_ms=20_000, timeout_sec=0.2)
            except paam.PaamTimeout as exc:  # Cancelled (the server) or PaamTimeout (this side)
                errors.append(exc)

        t = threading.Thread(target=run_slow)
        t.start()
        time.sleep(0.05)  # the spin holds the server's only worker; the urgent request queues
        t1 = time.monotonic()
        assert urgent.request("spin", duration_ms=1) >= 1.0
        assert time.monotonic() - t1 < 5, "the urgent request waited for the 20 s spin"
        t.join(10)
        assert errors and time.monotonic() - t0 < 10
        # The timed-out kernel is usable again: its next request collects the server's answer.
        assert slow.request("spin", duration_ms=1) >= 1.0


def test_submit_with_a_time_limit_gives_cancelled(server):
    with paam.Client(priority=1, kernels=["spin"], socket=server.socket_path) as c:
        t0 = time.monotonic()
        fut = c.submit("spin", duration_ms=20_000, timeout_sec=0.2)
        with pytest.raises(paam.Cancelled, match="time limit of 200.0 ms") as err:
            fut.result(timeout_sec=30)
        assert time.monotonic() - t0 < 10
        assert err.value.code == "cancelled" and isinstance(err.value, paam.PaamTimeout)
        with pytest.raises(paam.Cancelled):
            fut.result()  # collected: the same answer again
        assert c.request("spin", duration_ms=1) >= 1.0


def test_a_queued_request_past_its_limit_is_answered_without_running(server):
    with paam.Client(priority=1, kernels=["spin"], socket=server.socket_path) as busy, \
         paam.Client(priority=100, kernels=["spin"], socket=server.socket_path) as late:
        running = busy.submit("spin", duration_ms=1500)
        time.sleep(0.05)
        fut = late.submit("spin", duration_ms=1, timeout_sec=0.1)
        with pytest.raises(paam.Cancelled, match="did not run"):
            fut.result(timeout_sec=30)
        stamps = late.timestamps("spin")
        assert stamps["picked"] == 0 and stamps["device_start"] == 0
        assert running.result(timeout_sec=60) >= 1500
        assert stamps["completed"] < busy.timestamps("spin")["device_end"]


_SPIN_AND_WAIT = textwrap.dedent("""
    import sys, time
    import paam
    c = paam.Client(priority=1, kernels=["spin"], socket=sys.argv[1])
    c.submit("spin", duration_ms=20_000)
    print("submitted", flush=True)
    time.sleep(60)
""")


def test_a_killed_clients_running_spin_is_stopped(server):
    victim = subprocess.Popen([sys.executable, "-c", _SPIN_AND_WAIT, server.socket_path],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert victim.stdout.readline().strip() == "submitted", victim.stderr.read()
        time.sleep(0.3)  # its spin runs on the only worker
    finally:
        victim.kill()
        victim.wait()
    t0 = time.monotonic()
    with paam.Client(priority=1, kernels=["spin"], socket=server.socket_path) as c:
        assert c.request("spin", duration_ms=1) >= 1.0
    assert time.monotonic() - t0 < 5, "the dead client's spin kept the worker"


def test_max_request_ms_caps_a_request_without_a_limit_of_its_own():
    with paam.testing.start_server(device_cpu=-2, extra_args=["--max-request-ms", "300"]) as srv:
        with paam.Client(priority=1, kernels=["spin"], socket=srv.socket_path) as c:
            t0 = time.monotonic()
            with pytest.raises(paam.Cancelled, match="cap on a request's length of 300.0 ms"):
                c.request("spin", duration_ms=20_000)
            with pytest.raises(paam.PaamTimeout):  # a longer limit of its own does not lift the cap
                c.request("spin", duration_ms=20_000, timeout_sec=10)
            assert time.monotonic() - t0 < 15
            assert c.request("spin", duration_ms=1) >= 1.0


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1.5", "86400001"])
def test_bad_max_request_ms_values_are_refused(value, tmp_path):
    r = subprocess.run([paam.testing.find_paamd(), "--socket", str(tmp_path / "s.sock"),
                        "--max-request-ms", value], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "--max-request-ms" in r.stderr, r.stderr
