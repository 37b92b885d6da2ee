"""``paam bench gpu-contention``: one high-priority client while N low-priority clients keep the
GPU busy, through paamd versus N+1 processes invoking the GPU directly."""
from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from paam import figures
from paam.bench.gpu_report import gpu_name, md_table, payload_header, stats, write_outputs
from paam.bench.gpu_server import STAGES, kernel_cases, make_client

# The contention is on one GPU: every client of the server on its first (paamd spreads the
# registrations over its GPUs when it has several), as the direct processes all use GPU 0.
ONE_GPU = 0

def _lp_worker(socket: str | None, direct: bool, priority: int, lp_ms: float, ready: Any, stop: Any,
               measuring: Any, counter: Any, backend: str) -> None:
    c = make_client(priority, ["spin"], direct=direct, socket=socket, wait="suspend", backend=backend,
                    unit=ONE_GPU)
    c.request("spin", duration_ms=0.1)
    ready.release()
    n = 0
    while not stop.is_set():
        c.request("spin", duration_ms=lp_ms)
        if measuring.is_set():  # completed inside the high-priority client's measuring window
            n += 1
    with counter.get_lock():
        counter.value += n
    c.close()


def _contention_run(mode: str, n_lp: int, args: argparse.Namespace, socket: str | None,
                    case: dict[str, Any], server_log: Callable[[], str] | None = None) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    started = time.monotonic()
    direct = mode == "direct"
    hp = make_client(1000, {args.hp_kernel: (max(256, case["data"].nbytes), max(256, case["out"]))}, direct=direct,
                     socket=socket, wait="spin", backend=args.backend, unit=ONE_GPU)
    data = case["data"].view(np.uint8).reshape(-1)
    hp.input_buffer(args.hp_kernel)[:data.size] = data
    for _ in range(args.warmup):
        hp.request_raw(args.hp_kernel, data.size, case["params"])
    ready, stop, measuring, counter = ctx.Semaphore(0), ctx.Event(), ctx.Event(), ctx.Value("q", 0)
    # All low-priority clients share one priority (one bucket, served in turn), so none of them
    # starves another; the high-priority client registered first and holds the top bucket.
    procs = [ctx.Process(target=_lp_worker, args=(socket, direct, args.lp_priority, args.lp_ms, ready, stop,
                                                  measuring, counter, args.backend), daemon=True) for _ in range(n_lp)]
    for p in procs:
        p.start()

    def fail(what: str) -> SystemExit:
        log = server_log() if server_log is not None else ""
        return SystemExit(f"{mode} N={n_lp}: {what}" + (f"\npaamd log (tail):\n{log[-3000:]}" if log else ""))

    lat, dev, stages = [], [], []
    window = 0.0
    try:
        for _ in procs:
            if not ready.acquire(timeout=60):
                raise fail("a low-priority client did not start within 60 s")
        time.sleep(0.05)
        rng = random.Random(3)
        measuring.set()
        t_measure = time.monotonic()
        for _ in range(args.iters):
            time.sleep(rng.uniform(0, args.gap_ms) / 1e3)  # arrive at random phases
            t0 = time.perf_counter_ns()
            try:
                hp.request_raw(args.hp_kernel, data.size, case["params"], timeout_sec=30)
            except Exception as exc:  # noqa: BLE001 - reported with the server's log
                raise fail(f"high-priority request failed: {exc}") from exc
            t1 = time.perf_counter_ns()
            lat.append((t1 - t0) / 1e3)
            ts = hp.timestamps(args.hp_kernel)
            if ts.get("device_end") and ts.get("device_start"):
                dev.append((ts["device_end"] - ts["device_start"]) / 1e3)
            if all(ts.get(k) for k in STAGES):
                stages.append([round((ts[b] - ts[a]) / 1e3, 1) for a, b in zip(STAGES, STAGES[1:])])
        window = time.monotonic() - t_measure
        measuring.clear()
    finally:
        stop.set()
        deadline = time.monotonic() + 30
        for p in procs:
            p.join(timeout=max(0.1, deadline - time.monotonic()))
            if p.is_alive():
                print(f"  {mode} N={n_lp}: low-priority client {p.pid} did not stop; killed", file=sys.stderr)
                p.kill()
                p.join()
        hp.close()
    took = time.monotonic() - started
    print(f"  {mode:6s} N={n_lp}: {took:.1f} s", flush=True)
    return {"latency_us": stats(lat), "device_us": stats(dev), "raw_latency_us": [round(x, 1) for x in lat],
            "lp_requests_per_s": counter.value / window if window else 0.0,
            "lp_gpu_busy": counter.value * args.lp_ms / 1e3 / window if window else 0.0,
            "wall_s": round(took, 2), "stage_names": [f"{a}->{b}" for a, b in zip(STAGES, STAGES[1:])],
            "raw_stages_us": stages}


def cmd_contention(args: argparse.Namespace) -> int:
    import paam
    out = Path(args.out)
    cases = kernel_cases(args.scale)
    if args.hp_kernel not in cases:
        raise SystemExit(f"--hp-kernel must be one of {', '.join(cases)}")
    case = cases[args.hp_kernel]
    results: dict[str, dict[str, Any]] = {"server": {}, "direct": {}}
    for n_lp in args.clients:
        # a fresh server per point: the high-priority client registers first, so it gets the top bucket
        for mode in ("server", "direct"):
            try:
                if mode == "server":
                    with paam.testing.start_server(backend=args.backend, buckets=args.buckets,
                                                   extra_args=args.server_args.split()) as srv:
                        r = _contention_run(mode, n_lp, args, srv.socket_path, case, srv.log)
                else:
                    r = _contention_run(mode, n_lp, args, None, case)
            except SystemExit as exc:  # keep the other points
                print(f"  {mode} N={n_lp} failed: {exc}", file=sys.stderr, flush=True)
                r = {"error": str(exc)}
            results[mode][str(n_lp)] = r
            if "error" not in r:
                s = r["latency_us"]
                print(f"  {mode:6s} N={n_lp}: p50 {s['p50']:.1f} p99 {s['p99']:.1f} max {s['max']:.1f} µs",
                      flush=True)
    payload = payload_header(args, "gpu-contention") | {
        "hp_kernel": args.hp_kernel, "hp_shape": case["shape"], "lp_kernel": f"spin {args.lp_ms} ms",
        "iters": args.iters, "buckets": args.buckets, "lp_priority": args.lp_priority,
        "server_args": args.server_args, "results": results}
    rows = []
    for n_lp in args.clients:
        for mode in ("server", "direct"):
            r = results[mode][str(n_lp)]
            if "error" in r:
                rows.append([n_lp, mode, "failed", "", "", "", "", ""])
                continue
            s = r["latency_us"]
            rows.append([n_lp, mode, s["p50"], s["p99"], s["max"], r["device_us"].get("p50", float("nan")),
                         round(r["lp_requests_per_s"], 1), f"{100 * r['lp_gpu_busy']:.0f}%"])
    table = (f"High-priority {args.hp_kernel} ({case['shape']}) latency (µs) while N low-priority clients "
             f"run spin {args.lp_ms} ms back to back; server: paamd {args.backend} backend, {args.buckets} buckets; "
             f"direct: N+1 processes, one context each; {args.iters} requests per point, {gpu_name()}\n\n" +
             md_table(["N", "mode", "p50", "p99", "max", "device p50", "LP req/s", "LP spin share"], rows))

    def plot(path: Path) -> None:
        plt = figures.pyplot()
        fig, ax = plt.subplots(figsize=(7, 4))
        for mode, color in (("server", "tab:blue"), ("direct", "tab:red")):
            xs = [n for n in args.clients if "error" not in results[mode][str(n)]]
            for key, style in (("p50", "o-"), ("p99", "s--"), ("max", "v:")):
                ax.plot(xs, [results[mode][str(n)]["latency_us"][key] for n in xs], style, color=color,
                        label=f"{mode} {key}")
        ax.set_xlabel("low-priority clients N")
        ax.set_ylabel("high-priority latency (µs)")
        ax.set_yscale("log")
        ax.legend(fontsize=8, ncol=2)
        figures.save(fig, path, dpi=120)

    write_outputs(out, "contention", payload, table, plot)
    return 0
