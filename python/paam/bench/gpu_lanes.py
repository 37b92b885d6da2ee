"""``paam bench gpu-lanes``: clients of one priority (one bucket) releasing spins together, the
bucket on one lane or several (``paamd --lanes``), for spins that take part of the GPU or all."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from paam import figures
from paam.bench.gpu_report import gpu_name, md_table, payload_header, stats, write_outputs


def _lanes_point(socket: str, args: argparse.Namespace, width: int) -> dict[str, Any]:
    """``args.clients`` clients of one priority release a spin of ``args.ms`` at ``width``% of
    the GPU together, ``args.iters`` times; per release: each request's latency, and the
    makespan from the first submit to the last result."""
    import threading

    import paam
    n, total = args.clients, args.warmup + args.iters
    start = np.zeros((n, total), dtype=np.int64)
    end = np.zeros((n, total), dtype=np.int64)
    dev = np.zeros((n, total), dtype=np.int64)
    barrier = threading.Barrier(n, timeout=60)
    errors: list[str] = []
    clients: list[Any] = []

    def run(i: int) -> None:
        c = clients[i]
        try:
            for k in range(total):
                barrier.wait()
                t0 = time.perf_counter_ns()
                c.request("spin", duration_ms=args.ms, width_pct=width, timeout_sec=30)
                start[i, k], end[i, k] = t0, time.perf_counter_ns()
                ts = c.timestamps("spin")
                dev[i, k] = ts["device_end"] - ts["device_start"]
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(f"client {i}: {type(exc).__name__}: {exc}")
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    try:
        for i in range(n):  # all registered before any starts; a failed one closes those made
            # all on the server's first GPU: the bench is about requests that meet in one bucket
            # of one GPU, and paamd spreads registrations over its GPUs when it has several
            clients.append(paam.Client(priority=args.priority, kernels=["spin"], wait="suspend",
                                       socket=socket, name=f"lanes-{i}", unit=0))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for c in clients:
            c.close()
    if errors:
        raise SystemExit("; ".join(e for e in errors if "BrokenBarrierError" not in e) or errors[0])
    keep = slice(args.warmup, total)
    lat = (end - start)[:, keep] / 1e6
    makespan = (end[:, keep].max(axis=0) - start[:, keep].min(axis=0)) / 1e6
    return {"latency_ms": stats(lat.ravel()), "makespan_ms": stats(makespan),
            "device_ms": stats(dev[:, keep].ravel() / 1e6),
            "raw_makespan_ms": [round(float(x), 4) for x in makespan]}


def cmd_lanes(args: argparse.Namespace) -> int:
    import paam
    out = Path(args.out)
    if args.clients < 2:
        raise SystemExit("--clients must be at least 2 (the bench is about requests that meet in one bucket)")
    if any(not 1 <= w <= 100 for w in args.widths):
        raise SystemExit("--widths are percentages of the GPU's block slots, 1..100")
    if any(n < 1 for n in args.lanes):
        raise SystemExit("--lanes values must be at least 1")
    results: dict[str, dict[str, Any]] = {}
    for lanes in args.lanes:
        with paam.testing.start_server(backend=args.backend, buckets=1,
                                       extra_args=["--lanes", str(lanes)] + args.server_args.split()) as srv:
            for width in args.widths:
                t = time.monotonic()
                try:
                    r = _lanes_point(srv.socket_path, args, width)
                except SystemExit as exc:  # keep the other points
                    print(f"  lanes {lanes} width {width}% failed: {exc}\n{srv.log()[-2000:]}", file=sys.stderr)
                    r = {"error": str(exc)}
                results[f"{lanes}/{width}"] = r
                if "error" not in r:
                    m = r["makespan_ms"]
                    print(f"  lanes {lanes} width {width:3d}%: makespan p50 {m['p50']:.2f} p99 {m['p99']:.2f} "
                          f"max {m['max']:.2f} ms ({time.monotonic() - t:.1f} s)", flush=True)
    payload = payload_header(args, "gpu-lanes") | {
        "kernel": f"spin {args.ms} ms", "clients": args.clients, "iters": args.iters, "priority": args.priority,
        "lanes": args.lanes, "widths_pct": args.widths, "backend": args.backend, "server_args": args.server_args,
        "results": results}
    rows = []
    for lanes in args.lanes:
        for width in args.widths:
            r = results[f"{lanes}/{width}"]
            if "error" in r:
                rows.append([lanes, width, "failed", "", "", "", "", ""])
                continue
            lat, m = r["latency_ms"], r["makespan_ms"]
            rows.append([lanes, width, lat["p50"], lat["p99"], m["p50"], m["p99"], m["max"],
                         f"{m['p50'] / args.ms:.2f}"])
    table = (f"{args.clients} clients of one priority (one bucket) each release spin {args.ms} ms at once, "
             f"{args.iters} times per point, through paamd ({args.backend} backend) with its bucket on 1 or more "
             f"lanes (--lanes); width: the share of the GPU's block slots each spin takes"
             + (" (no meaning on the CPU backend)" if args.backend == "cpu" else "") + f"; ms; {gpu_name()}\n\n"
             + md_table(["lanes", "width %", "request p50", "request p99", "makespan p50", "makespan p99",
                         "makespan max", "makespan / kernel"], rows))

    def plot(path: Path) -> None:
        plt = figures.pyplot()
        fig, ax = plt.subplots(figsize=(7, 4))
        step = 0.8 / len(args.lanes)
        for j, lanes in enumerate(args.lanes):
            xs, p50, p99 = [], [], []
            for i, width in enumerate(args.widths):
                r = results[f"{lanes}/{width}"]
                if "error" in r:
                    continue
                xs.append(i - 0.4 + step * (j + 0.5))
                p50.append(r["makespan_ms"]["p50"])
                p99.append(r["makespan_ms"]["p99"] - r["makespan_ms"]["p50"])
            ax.bar(xs, p50, width=step * 0.9, yerr=[np.zeros(len(p99)), p99], capsize=3,
                   label=f"{lanes} lane{'s' if lanes > 1 else ''} (bar p50, whisker p99)")
        for k in (1, args.clients):
            ax.axhline(args.ms * k, color="grey", ls="--", lw=0.8)
            ax.text(-0.45, args.ms * k, f"{k}x kernel", va="bottom", fontsize=8, color="grey")
        ax.set_xticks(range(len(args.widths)), [f"{w}%" for w in args.widths])
        ax.set_xlabel("width of each spin (share of the GPU's block slots)")
        ax.set_ylabel(f"makespan of {args.clients} requests released together (ms)")
        ax.legend(fontsize=8)
        figures.save(fig, path, dpi=120)

    write_outputs(out, "lanes", payload, table, plot)
    return 0
