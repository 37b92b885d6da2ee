"""Device data (CUDA IPC): clients that hold their data on the GPU pass IPC handles at
registration and run requests on their own device buffers (docs/gpu.md, "Device data").

The GPU tests run the client in a separate process (CUDA IPC handles cannot be opened by the
process that made them) with CuPy, against a paamd on the CUDA backend; they skip without a GPU
or without CuPy. The first tests need neither: they check what a server without CUDA refuses.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import paam
from paam.errors import InvalidArgument

FAKE = paam.DeviceBuffers(b"\xab" * 64, 64, b"\xcd" * 64, 64, gpu=0)


def test_cpu_server_refuses_device_buffers_with_a_reason():
    with paam.testing.start_server(buckets=1) as srv:
        with pytest.raises(InvalidArgument, match="--backend cuda"):
            paam.Client(priority=1, kernels=["vector_add"], socket=srv.socket_path,
                        device_buffers={"vector_add": FAKE})
        # The tuple form of the issue: (input handle, input bytes, output handle, output bytes, gpu).
        with pytest.raises(InvalidArgument, match="--backend cuda"):
            paam.Client(priority=1, kernels=["vector_add"], socket=srv.socket_path,
                        device_buffers={"vector_add": (b"\x01" * 64, 64, b"\x02" * 64, 64, 0)})
        with paam.Client(priority=1, kernels=["vector_add"], socket=srv.socket_path) as c:
            with pytest.raises(InvalidArgument, match="without device_buffers"):
                c.request_device("vector_add", params=[1])
            np.testing.assert_array_equal(c.request("vector_add", [1, 2], [3, 4]), [4, 6])


def test_device_buffers_are_checked_on_the_client_side():
    with pytest.raises(paam.UnknownKernel, match="not among the kernels"):
        paam.Client(priority=1, kernels=["spin"], direct=True, device_buffers={"vector_add": FAKE})
    with pytest.raises(InvalidArgument, match="64 bytes"):
        paam.Client(priority=1, kernels=["vector_add"], direct=True,
                    device_buffers={"vector_add": paam.DeviceBuffers(b"\x00" * 10, 8, b"\x00" * 64, 8)})
    with pytest.raises(InvalidArgument, match="direct mode"):
        paam.Client(priority=1, kernels=["vector_add"], direct=True, device_buffers={"vector_add": FAKE})


# ------------------------------------------------------------------------------------------
# On a GPU

def _cuda_available() -> bool:
    try:
        c = paam.Client(priority=1, kernels=["spin"], direct=True, direct_backend="cuda")
    except paam.PaamError:
        return False
    c.close()
    return True


def _cupy_available() -> bool:
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means no CuPy
        return False
    return True


needs_gpu = pytest.mark.skipif(not (_cuda_available() and _cupy_available()),
                               reason="no CUDA GPU, no CUDA build of paam, or no CuPy")

# The client process: allocates plain cudaMalloc buffers, registers them, then follows the
# commands of its `mode`, printing one JSON line per result.
CHILD = textwrap.dedent(r"""
    import json, sys, time
    import numpy as np, cupy as cp, paam
    sock, mode, n, big = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rt = cp.cuda.runtime

    def device_array(nbytes, count):
        ptr = rt.malloc(nbytes)
        mem = cp.cuda.UnownedMemory(ptr, nbytes, None)
        return ptr, cp.ndarray((count,), cp.float32, cp.cuda.MemoryPointer(mem, 0))

    in_bytes = max(2 * n * 4, big)
    ab_ptr, ab = device_array(in_bytes, in_bytes // 4)
    out_ptr, out = device_array(n * 4, n)
    bufs = paam.DeviceBuffers(rt.ipcGetMemHandle(ab_ptr), 2 * n * 4, rt.ipcGetMemHandle(out_ptr), n * 4,
                              gpu=cp.cuda.runtime.getDevice())
    def say(**kw):
        print(json.dumps(kw), flush=True)

    if mode == "toolarge":
        bufs.input_bytes = in_bytes + (64 << 20)   # more than the allocation holds
        try:
            paam.Client(priority=5, kernels={"vector_add": (8 << 20, 4 << 20)}, socket=sock,
                        device_buffers={"vector_add": bufs})
            say(error=None)
        except paam.PaamError as e:
            say(error=e.code, message=str(e))
        sys.exit(0)
    if mode == "othergpu":
        bufs.gpu = 7
        try:
            paam.Client(priority=5, kernels=["vector_add"], socket=sock, device_buffers={"vector_add": bufs})
            say(error=None)
        except paam.PaamError as e:
            say(error=e.code, message=str(e))
        sys.exit(0)

    c = paam.Client(priority=5, kernels={"vector_add": (max(2 * n * 4, 64), max(n * 4, 64))}, socket=sock,
                    wait="spin",
                    device_buffers={"vector_add": bufs})
    rng = cp.random.default_rng(3)
    a = rng.standard_normal(n, dtype=cp.float32)
    b = rng.standard_normal(n, dtype=cp.float32)
    ab[:n] = a
    ab[n:2 * n] = b
    out.fill(-1)
    cp.cuda.Device().synchronize()
    nbytes = c.request_device("vector_add", params=[n])
    ok1 = bool(cp.array_equal(out, a + b))
    ab[:n] = b
    cp.cuda.Device().synchronize()
    fut = c.submit_device("vector_add", params=[n])
    nbytes2 = fut.result(timeout_sec=10)
    ok2 = bool(cp.array_equal(out, 2 * b))
    host = c.request("vector_add", np.ones(3, np.float32), np.arange(3, dtype=np.float32)).tolist()
    try:
        c.request_device("vector_add", params=[n + 1], input_bytes=2 * (n + 1) * 4)
        too_big = None
    except paam.PaamError as e:
        too_big = e.code
    ts = c.timestamps("vector_add")
    say(nbytes=nbytes, nbytes2=nbytes2, ok1=ok1, ok2=ok2, host=host, too_big=too_big, unit=c.unit,
        kernel_us=(ts["device_end"] - ts["device_start"]) / 1e3)
    if mode == "hold":
        say(ready=True)
        time.sleep(600)   # killed by the test while registered
    c.close()
""")


def _child(sock: str, mode: str, n: int, big: int = 0, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, sock, mode, str(n), str(big)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _run_child(sock: str, mode: str, n: int, big: int = 0) -> dict:
    p = _child(sock, mode, n, big)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, f"client process failed ({p.returncode}):\n{out}\n{err}"
    return json.loads(out.strip().splitlines()[-1])


@needs_gpu
@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_vector_add_runs_on_the_clients_device_buffers(n):
    with paam.testing.start_server(backend="cuda", buckets=6) as srv:
        r = _run_child(srv.socket_path, "run", n)
        assert r["nbytes"] == r["nbytes2"] == 4 * n, r
        assert r["ok1"] and r["ok2"], f"device output differs from CuPy's a + b: {r}"
        assert r["host"] == [1.0, 2.0, 3.0], "host requests keep working on the same registration"
        assert r["too_big"] == "input_too_large", r
        assert r["unit"] == 0
        assert srv.proc.poll() is None


@needs_gpu
def test_registration_is_refused_for_oversized_buffers_and_foreign_gpus():
    with paam.testing.start_server(backend="cuda", buckets=2) as srv:
        r = _run_child(srv.socket_path, "toolarge", 256)
        assert r["error"] == "input_too_large" and "allocation holds" in r["message"], r
        r = _run_child(srv.socket_path, "othergpu", 256)
        assert r["error"] == "invalid_argument" and "GPU 7" in r["message"], r
        # Garbage handles cannot be opened.
        from cupy.cuda import runtime  # noqa: F401 - only to be sure CUDA works here
        with pytest.raises(InvalidArgument, match="cannot open"):
            paam.Client(priority=1, kernels=["vector_add"], socket=srv.socket_path,
                        device_buffers={"vector_add": FAKE})
        assert _run_child(srv.socket_path, "run", 64)["ok1"], "the server keeps serving"


def _free_gpu_bytes() -> int:
    import cupy as cp
    return int(cp.cuda.runtime.memGetInfo()[0])


@needs_gpu
def test_a_dying_client_releases_its_ipc_buffers_and_the_server_keeps_serving():
    big = 2 << 30  # a 2 GiB input allocation: visible in the GPU's free memory while it is held
    with paam.testing.start_server(backend="cuda", buckets=2) as srv:
        assert _run_child(srv.socket_path, "run", 64)["ok1"]  # server context and kernels warm
        time.sleep(0.5)
        free_before = _free_gpu_bytes()
        p = _child(srv.socket_path, "hold", 1 << 16, big, start_new_session=True)
        try:
            first = json.loads(p.stdout.readline())
            assert first["ok1"] and first["ok2"], first
            assert json.loads(p.stdout.readline()).get("ready")
            free_held = _free_gpu_bytes()
            assert free_before - free_held >= big, (free_before, free_held)
        finally:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "went away" not in srv.log():
            time.sleep(0.05)
        assert "went away" in srv.log(), srv.log()
        # Once paamd has closed its IPC mappings the driver frees the dead client's memory.
        deadline = time.monotonic() + 20
        free_after = _free_gpu_bytes()
        while time.monotonic() < deadline and free_before - free_after > (256 << 20):
            time.sleep(0.1)
            free_after = _free_gpu_bytes()
        print(f"GPU free: before {free_before >> 20} MiB, client holding {free_held >> 20} MiB, "
              f"after its death {free_after >> 20} MiB")
        assert free_before - free_after <= (256 << 20), (free_before, free_held, free_after)
        assert srv.proc.poll() is None
        r = _run_child(srv.socket_path, "run", 1000)
        assert r["ok1"] and r["ok2"], "the server keeps serving device-data clients"
