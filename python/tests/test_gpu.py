"""The CUDA backend through the Python client (server and direct mode), and the gpu-* bench
sub-commands' registration. GPU tests skip where no GPU (or no CUDA build) is present.

A test whose clients must meet on one GPU starts paamd on GPU 0 alone (``ONE_GPU``): with
several GPUs paamd spreads registrations over them (tests/test_gpu_units.py), and two clients
on two GPUs neither share a bucket map nor contend."""
from __future__ import annotations

import argparse
import json
import subprocess
import threading
import time

import numpy as np
import pytest

import paam
from paam.bench import gpu, gpu_lanes, gpu_preempt, gpu_report
from paam.testing import find_paamd


def _cuda_available() -> bool:
    try:
        c = paam.Client(priority=1, kernels=["spin"], direct=True, direct_backend="cuda")
    except paam.PaamError:
        return False
    c.close()
    return True


needs_gpu = pytest.mark.skipif(not _cuda_available(), reason="no CUDA GPU, or paam built without CUDA")
ONE_GPU = [0]
DECL = {"vector_add": 8 << 20, "matmul": 8 << 20, "reduction": 4 << 20, "histogram": 4 << 20, "spin": None}


def test_gpu_bench_subcommands_register_and_parse():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="bench")
    gpu.register(sub)
    for name in ("gpu-preempt", "gpu-kappa", "gpu-backend", "gpu-kernels", "gpu-overhead", "gpu-contention",
                 "gpu-lanes", "gpu-all"):
        args = parser.parse_args([name, "--out", "/tmp/x"])
        assert callable(args.func), name
    args = parser.parse_args(["gpu-contention", "--clients", "0", "3", "--lp-ms", "2.5"])
    assert args.clients == [0, 3] and args.lp_ms == 2.5
    args = parser.parse_args(["gpu-preempt", "--kernels", "matmul", "histogram", "--iters", "7"])
    assert args.kernels == ["matmul", "histogram"] and args.iters == 7
    assert args.slicing == "both" and args.lead_us is None  # both modes, a random arrival
    assert gpu_preempt.binary_args(args)[-1] == "--random-lead"
    args = parser.parse_args(["gpu-preempt", "--kernels", "spin", "--slicing", "on", "--slice-us", "10",
                              "--lead-us", "0"])
    sub = gpu_preempt.binary_args(args)
    assert sub[sub.index("--slicing") + 1] == "on" and sub[sub.index("--slice-us") + 1] == "10.0"
    assert sub[-2:] == ["--lead-us", "0.0"]


def test_paamd_gpu_preempt_is_for_the_cuda_backend_and_checks_its_slice():
    r = subprocess.run([find_paamd(), "--gpu-preempt"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--gpu-preempt is for the cuda backend" in r.stderr
    r = subprocess.run([find_paamd(), "--backend", "cuda", "--gpu-preempt", "--gpu-slice-us", "0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--gpu-slice-us must be 1..10000, got 0" in r.stderr


@needs_gpu
def test_paamd_gpu_preempt_takes_kappa_from_the_slice(tmp_path):
    """Started with --gpu-preempt and no --preemption-ms, paamd's analysis charges the slice plus
    its launch (20 + 15 us) and says so; an explicit --preemption-ms wins."""
    for extra, kappa in (([], "kappa 0.035 ms"), (["--preemption-ms", "0.2"], "kappa 0.200 ms")):
        proc = subprocess.Popen([find_paamd(), "--backend", "cuda", "--buckets", "3", "--gpu-preempt",
                                 "--admission", "analysis", "--socket", str(tmp_path / "p.sock"), *extra],
                                stderr=subprocess.PIPE, text=True)
        try:
            line = ""
            deadline = time.monotonic() + 60
            while "serving on" not in line and time.monotonic() < deadline:
                line = proc.stderr.readline()
                if not line and proc.poll() is not None:
                    break
            assert "gpu preemption in 20 us slices (" + kappa + ")" in line, line
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _preempt_raw(kernels=("matmul", "spin")) -> dict:
    """A 'paam_gpu_bench preempt --slicing both' JSON, made up."""
    def stats(mean):
        return {"mean": mean, "max": 3 * mean, "min": 0.0, "std": 1.0, "p50": mean, "p99": 2 * mean}
    def mode(delay, lp):
        return {"alone_us": stats(100.0), "with_lp_us": stats(100.0 + delay), "delay_us": stats(delay),
                "lp_alone_us": stats(lp), "lp_with_hp_us": stats(lp + 100), "hp_finished_first": 0.5,
                "lp_paused": 0.5, "raw_delay_us": [delay] * 3}
    return {"bench": "preempt", "iters": 3, "lead_us": 0.0, "random_lead": True, "slice_us": 20.0,
            "device": {"name": "GPU", "stream_priority_least": 0, "stream_priority_greatest": -5},
            "kernels": {k: {"shape": "s", "lp_shape": "s", "lead_max_us": 1.0, "lp_slicing_cost": 0.05,
                            "modes": {"off": mode(40.0, 200.0), "on": mode(8.0, 210.0)}} for k in kernels}}


def test_gpu_preempt_renders_a_raw_run_without_a_gpu(tmp_path):
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps(_preempt_raw()))
    parser = argparse.ArgumentParser()
    gpu.register(parser.add_subparsers(dest="bench"))
    args = parser.parse_args(["gpu-preempt", "--raw", str(raw), "--out", str(tmp_path / "out")])
    assert args.func(args) == 0
    table = (tmp_path / "out" / "preempt.md").read_text()
    assert "| matmul | s | off | 100.00 | 40.00 | 80.00 | 120.00 | 200.00 |" in table
    assert "| spin | s | on | 100.00 | 8.00 | 16.00 | 24.00 | 210.00 | +5.0% |" in table
    assert (tmp_path / "out" / "preempt.png").stat().st_size > 1000
    assert json.loads((tmp_path / "out" / "preempt.json").read_text())["result"]["slice_us"] == 20.0
    # A JSON of another shape (Table I without --slicing) is refused, naming the file.
    old = _preempt_raw()
    old["kernels"]["matmul"] = {"shape": "s", "delay_us": {}}
    raw.write_text(json.dumps(old))
    with pytest.raises(SystemExit, match="not a 'paam_gpu_bench preempt' JSON of per-mode"):
        args.func(args)


def test_stats_summarize_what_the_tables_report():
    s = gpu_report.stats([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s["n"] == 5 and s["max"] == 100.0 and s["min"] == 1.0 and s["p50"] == 3.0
    assert s["mean"] == pytest.approx(22.0)


def _check_kernels(c: paam.Client) -> None:
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(100_003, dtype=np.float32), rng.standard_normal(100_003, dtype=np.float32)
    np.testing.assert_array_equal(c.request("vector_add", a, b), a + b)
    A, B = rng.standard_normal((67, 129), dtype=np.float32), rng.standard_normal((129, 45), dtype=np.float32)
    want = A.astype(np.float64) @ B.astype(np.float64)
    got = c.request("matmul", A, B)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5
    x = rng.random(1_000_001, dtype=np.float32)
    assert c.request("reduction", x) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-5)
    h = rng.integers(0, 256, 1_000_003, dtype=np.uint8)
    np.testing.assert_array_equal(c.request("histogram", h), np.bincount(h, minlength=256))
    assert c.request("spin", duration_ms=2.0) >= 1.98


@needs_gpu
def test_direct_mode_runs_the_cuda_kernels_in_process():
    with paam.Client(priority=5, kernels=DECL, direct=True, direct_backend="cuda", wait="spin") as c:
        assert c.direct
        _check_kernels(c)


@needs_gpu
def test_server_with_cuda_backend_runs_the_kernels():
    with paam.testing.start_server(backend="cuda", buckets=6) as srv:
        with paam.Client(priority=5, kernels=DECL, socket=srv.socket_path, wait="spin") as c:
            assert not c.direct and c.buckets == 6
            _check_kernels(c)
            ts = c.last_timestamps
            assert ts["submitted"] <= ts["device_start"] <= ts["device_end"] <= ts["completed"]


@needs_gpu
def test_high_priority_client_overtakes_a_long_low_priority_kernel_through_the_server():
    with paam.testing.start_server(backend="cuda", buckets=6, cuda_devices=ONE_GPU) as srv:
        hp = paam.Client(priority=100, kernels=["vector_add"], socket=srv.socket_path, wait="spin")
        lp = paam.Client(priority=1, kernels=["spin"], socket=srv.socket_path, wait="suspend")
        try:
            assert hp.bucket < lp.bucket
            a = np.ones(1 << 20, np.float32)
            hp.request("vector_add", a, a)  # warm
            fut = lp.submit("spin", duration_ms=300.0)
            time.sleep(0.03)  # the spin holds the GPU now
            out = hp.request("vector_add", a, a)
            assert not fut.done(), "the high-priority request waited for the 300 ms low-priority spin"
            np.testing.assert_array_equal(out, 2 * a)
            assert fut.result(timeout_sec=5) >= 299.0
        finally:
            hp.close()
            lp.close()


@needs_gpu
def test_direct_clients_in_threads_share_one_process_context():
    errors = []

    def work(seed: int) -> None:
        try:
            with paam.Client(priority=seed, kernels=["vector_add"], direct=True, direct_backend="cuda") as c:
                rng = np.random.default_rng(seed)
                for _ in range(20):
                    a, b = rng.standard_normal(1000, dtype=np.float32), rng.standard_normal(1000, dtype=np.float32)
                    np.testing.assert_array_equal(c.request("vector_add", a, b), a + b)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _lanes_args(tmp_path, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gpu.register(parser.add_subparsers(dest="bench"))
    return parser.parse_args(["gpu-lanes", "--out", str(tmp_path), *extra])


def test_gpu_lanes_runs_on_the_cpu_backend_and_refuses_bad_input(tmp_path):
    """The bench's whole path (clients released together, paamd --lanes, width passed to spin)
    on the CPU backend, where the width means nothing: the figures only need to be sane."""
    args = _lanes_args(tmp_path, "--backend", "cpu", "--iters", "8", "--warmup", "1", "--ms", "1",
                       "--widths", "50", "100", "--lanes", "1", "2")
    assert gpu_lanes.cmd_lanes(args) == 0
    import json
    data = json.loads((tmp_path / "lanes.json").read_text())
    assert set(data["results"]) == {"1/50", "1/100", "2/50", "2/100"}
    for r in data["results"].values():
        assert r["makespan_ms"]["n"] == 8 and r["makespan_ms"]["min"] >= 1.0
        assert r["latency_ms"]["n"] == 16 and r["device_ms"]["min"] >= 0.99
    assert (tmp_path / "lanes.png").stat().st_size > 0 and "makespan" in (tmp_path / "lanes.md").read_text()
    for bad, match in ((["--widths", "0"], "1..100"), (["--widths", "101"], "1..100"),
                       (["--clients", "1"], "at least 2"), (["--lanes", "0"], "at least 1")):
        with pytest.raises(SystemExit, match=match):
            gpu_lanes.cmd_lanes(_lanes_args(tmp_path, "--backend", "cpu", *bad))


def test_spin_width_is_checked_before_the_request_is_sent(server):
    with paam.Client(kernels=["spin"], socket=server.socket_path) as c:
        for bad in (0, 101, -5):
            with pytest.raises(paam.errors.InvalidArgument, match="width_pct"):
                c.request("spin", duration_ms=0.1, width_pct=bad)
        assert c.request("spin", duration_ms=0.5, width_pct=30) >= 0.5  # the CPU device ignores it


@needs_gpu
def test_half_width_spins_of_one_bucket_overlap_on_two_lanes_only(tmp_path):
    """Two clients of one priority: with one lane their 10 ms half-width spins run one after the
    other (about 20 ms for the pair), with two lanes side by side (about 10 ms)."""
    for lanes, low, high in ((1, 18.0, 40.0), (2, 9.9, 15.0)):
        args = _lanes_args(tmp_path, "--iters", "10", "--warmup", "2", "--ms", "10")
        with paam.testing.start_server(backend="cuda", buckets=1, cuda_devices=ONE_GPU,
                                       extra_args=["--lanes", str(lanes)]) as srv:
            r = gpu_lanes._lanes_point(srv.socket_path, args, 50)
        assert low <= r["makespan_ms"]["p50"] <= high, (lanes, r["makespan_ms"])
