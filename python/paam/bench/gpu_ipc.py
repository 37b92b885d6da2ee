"""Device data (CUDA IPC) versus host data: round trip of ``vector_add`` through paamd.

``python -m paam.bench.gpu_ipc --out results/gpu_ipc`` starts a paamd on the CUDA backend and,
from this process as its client (CuPy for the device buffers), sends back-to-back
``vector_add`` requests of each payload twice: on host data (input already in the region's
pinned input area; the backend copies it in and the output out) and on the client's own
device buffers registered as CUDA IPC handles (no copies). Payload = input bytes (a and b):
8 B is n = 1, 1 MiB is n = 131072. Client waits by spinning. Writes gpu_ipc.json and
gpu_ipc.md into ``--out`` and prints the table.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import time
from pathlib import Path

import numpy as np

import paam
from paam.bench.gpu_report import stats as _stats


def _device_array(cp, nbytes: int):
    ptr = cp.cuda.runtime.malloc(nbytes)
    mem = cp.cuda.UnownedMemory(ptr, nbytes, None)
    return ptr, cp.ndarray((nbytes // 4,), cp.float32, cp.cuda.MemoryPointer(mem, 0))


def _measure(c: paam.Client, k: int, nbytes: int, n: int, device: bool, requests: int, warmup: int) -> dict:
    native = c._native  # the thin native call: no Python packing in the timed window
    rt, kernel, server = [], [], []
    for i in range(warmup + requests):
        t0 = time.perf_counter_ns()
        native.call(k, nbytes, [n], 0, device)
        t1 = time.perf_counter_ns()
        if i >= warmup:
            ts = native.timestamps(k)
            rt.append((t1 - t0) / 1e3)
            kernel.append((ts["device_end"] - ts["device_start"]) / 1e3)
            server.append((ts["completed"] - ts["picked"]) / 1e3)
    return {"round_trip_us": _stats(rt), "kernel_us": _stats(kernel), "picked_to_completed_us": _stats(server)}


def run(args: argparse.Namespace) -> dict:
    import cupy as cp

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    with paam.testing.start_server(backend="cuda", buckets=6) as srv:
        for payload in args.payloads:
            n = max(1, payload // 8)
            in_bytes, out_bytes = 2 * n * 4, n * 4
            ab_ptr, ab = _device_array(cp, in_bytes)
            out_ptr, out = _device_array(cp, max(out_bytes, 4))
            rng = cp.random.default_rng(1)
            ab[:] = rng.standard_normal(2 * n, dtype=cp.float32)
            cp.cuda.Device().synchronize()
            bufs = paam.DeviceBuffers(cp.cuda.runtime.ipcGetMemHandle(ab_ptr), in_bytes,
                                      cp.cuda.runtime.ipcGetMemHandle(out_ptr), out_bytes,
                                      gpu=cp.cuda.runtime.getDevice())
            with paam.Client(priority=100, kernels={"vector_add": (in_bytes, out_bytes)}, socket=srv.socket_path,
                             wait="spin", device_buffers={"vector_add": bufs}) as c:
                k = 0
                host_in = ab.get()
                c.input_buffer("vector_add")[:in_bytes] = host_in.view(np.uint8)
                res = {}
                for mode, device in (("host", False), ("device", True)):
                    res[mode] = _measure(c, k, in_bytes, n, device, args.requests, args.warmup)
                # Both paths computed the same thing.
                want = host_in[:n] + host_in[n:]
                np.testing.assert_array_equal(out.get()[:n], want)
                np.testing.assert_array_equal(c._native.output_view(k)[:out_bytes].view(np.float32), want)
            cp.cuda.runtime.free(ab_ptr)
            cp.cuda.runtime.free(out_ptr)
            rows.append({"payload_bytes": in_bytes, "n": n, **res})
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice())
    result = {
        "command": "python -m paam.bench.gpu_ipc " + " ".join(
            [f"--requests {args.requests}", f"--warmup {args.warmup}", "--payloads",
             *map(str, args.payloads), "--out", str(args.out)]),
        "date": dt.date.today().isoformat(),
        "machine": f"{props['name'].decode()}, {platform.node()}, Linux {platform.release()}",
        "server": "paamd --backend cuda --buckets 6 (default poll window); client wait spin",
        "rows": rows,
    }
    (out_dir / "gpu_ipc.json").write_text(json.dumps(result, indent=1))
    lines = ["| payload | path | round trip p50 | p99 | mean | picked→completed p50 | kernel p50 |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        for mode in ("host", "device"):
            m = r[mode]
            lines.append(f"| {r['payload_bytes']} B | {mode} | {m['round_trip_us']['p50']:.2f} | "
                         f"{m['round_trip_us']['p99']:.2f} | {m['round_trip_us']['mean']:.2f} | "
                         f"{m['picked_to_completed_us']['p50']:.2f} | {m['kernel_us']['p50']:.2f} |")
    table = "\n".join(lines)
    (out_dir / "gpu_ipc.md").write_text(table + "\n")
    print(table)
    return result


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--payloads", type=int, nargs="+", default=[8, 1 << 20])
    p.add_argument("--out", default="results/gpu_ipc")


def register(bench_sub: argparse._SubParsersAction) -> None:
    """``paam bench gpu-ipc``: device data (CUDA IPC) versus host data through paamd."""
    p = bench_sub.add_parser("gpu-ipc", help="round trip with device data (CUDA IPC) vs host data (needs CuPy)",
                             description=__doc__.splitlines()[0])
    _add_arguments(p)
    p.set_defaults(func=lambda args: run(args) and 0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _add_arguments(p)
    run(p.parse_args())


if __name__ == "__main__":
    main()
