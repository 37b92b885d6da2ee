"""``paam bench gpu-kernels`` (kernel time alone, through paamd versus direct invocation; paper
Fig. 13) and ``gpu-overhead`` (request overhead through paamd, stage by stage)."""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from paam import figures
from paam.bench.gpu_report import gpu_name, md_table, payload_header, stats, write_outputs


def kernel_cases(scale: float) -> dict[str, dict[str, Any]]:
    """Inputs (written once into the region) and parameters of each measured kernel."""
    rng = np.random.default_rng(1)
    n_vec = int(1_000_000 * scale)
    mm = max(16, int(512 * scale))
    n_red = int(4_000_000 * scale)
    n_hist = int(16_000_000 * scale)
    return {
        "vector_add": {"data": rng.standard_normal(2 * n_vec, dtype=np.float32), "params": [n_vec],
                       "shape": f"n={n_vec}", "out": 4 * n_vec},
        "matmul": {"data": rng.standard_normal(2 * mm * mm, dtype=np.float32), "params": [mm, mm, mm],
                   "shape": f"{mm}x{mm}x{mm}", "out": 4 * mm * mm},
        "reduction": {"data": rng.standard_normal(n_red, dtype=np.float32), "params": [n_red],
                      "shape": f"n={n_red}", "out": 8},
        "histogram": {"data": rng.integers(0, 256, n_hist, dtype=np.uint8), "params": [n_hist],
                      "shape": f"n={n_hist}", "out": 1024},
        "spin": {"data": np.zeros(0, np.uint8), "params": [1_000_000], "shape": "1 ms", "out": 8},
    }


def make_client(priority: int, kernels: Any, *, direct: bool, socket: str | None, wait: str = "spin",
                backend: str = "cuda", unit: int = -1):
    """A client in direct mode (on GPU 0) or of the paamd at ``socket``, on its GPU ``unit``
    (-1: where paamd places it)."""
    import paam
    if direct:
        return paam.Client(priority=priority, kernels=kernels, wait=wait, direct=True, direct_backend=backend)
    return paam.Client(priority=priority, kernels=kernels, wait=wait, socket=socket, unit=unit)


STAGES = ("submitted", "dequeued", "picked", "device_start", "device_end", "completed", "woken")


def time_requests(c: Any, name: str, case: dict[str, Any], iters: int, warmup: int) -> dict[str, Any]:
    data = case["data"].view(np.uint8).reshape(-1)
    c.input_buffer(name)[:data.size] = data
    rt, dev = [], []
    stages: dict[str, list[float]] = {f"{a}->{b}": [] for a, b in zip(STAGES, STAGES[1:])}
    for i in range(warmup + iters):
        t0 = time.perf_counter_ns()
        c.request_raw(name, data.size, case["params"])
        t1 = time.perf_counter_ns()
        if i >= warmup:
            ts = c.timestamps(name)
            rt.append((t1 - t0) / 1e3)
            if ts.get("device_end") and ts.get("device_start"):
                dev.append((ts["device_end"] - ts["device_start"]) / 1e3)
            if all(ts.get(k) for k in STAGES):
                for a, b in zip(STAGES, STAGES[1:]):
                    stages[f"{a}->{b}"].append((ts[b] - ts[a]) / 1e3)
    return {"round_trip_us": rt, "device_us": dev, "stages_us": stages}


def cmd_kernels(args: argparse.Namespace) -> int:
    import paam
    out = Path(args.out)
    cases = kernel_cases(args.scale)
    decl = {n: (max(256, c["data"].nbytes), max(256, c["out"])) for n, c in cases.items()}
    results: dict[str, dict[str, Any]] = {}
    with paam.testing.start_server(backend=args.backend, buckets=args.buckets,
                                   extra_args=args.server_args.split()) as srv:
        for mode in ("server", "direct"):
            c = make_client(100, decl, direct=mode == "direct", socket=srv.socket_path, wait=args.wait,
                            backend=args.backend)
            try:
                for name, case in cases.items():
                    r = time_requests(c, name, case, args.iters, args.warmup)
                    results.setdefault(name, {"shape": case["shape"]})[mode] = {
                        "round_trip_us": stats(r["round_trip_us"]), "device_us": stats(r["device_us"]),
                        "stages_us": {k: stats(v) for k, v in r["stages_us"].items() if v}}
            finally:
                c.close()
    payload = payload_header(args, "gpu-kernels") | {"iters": args.iters, "wait": args.wait,
                                                     "server_args": args.server_args, "kernels": results}
    rows = []
    for name, r in results.items():
        s, d = r["server"]["round_trip_us"], r["direct"]["round_trip_us"]
        rows.append([name, r["shape"], d["p50"], s["p50"], s["p50"] - d["p50"], d["mean"], s["mean"],
                     d["p99"], s["p99"], r["server"]["device_us"].get("p50", float("nan"))])
    table = (f"Kernel round trip alone (µs), paamd ({args.backend} backend, {args.buckets} buckets"
             f"{', ' + args.server_args if args.server_args else ''}) vs direct invocation, wait={args.wait}, "
             f"{args.iters} requests each, {gpu_name()}\n\n" +
             md_table(["kernel", "shape", "direct p50", "server p50", "Δ p50", "direct mean", "server mean",
                       "direct p99", "server p99", "device p50 (server)"], rows))

    def plot(path: Path) -> None:
        plt = figures.pyplot()
        names = list(results)
        x = np.arange(len(names))
        fig, ax = plt.subplots(figsize=(8, 4))
        for off, mode in ((-0.2, "direct"), (0.2, "server")):
            p50 = [results[n][mode]["round_trip_us"]["p50"] for n in names]
            p99 = [results[n][mode]["round_trip_us"]["p99"] for n in names]
            ax.bar(x + off, p50, 0.4, label=f"{mode} (p50; whisker p99)",
                   yerr=[np.zeros(len(names)), np.subtract(p99, p50)], capsize=3)
        ax.set_xticks(x, [f"{n}\n{results[n]['shape']}" for n in names], fontsize=8)
        ax.set_ylabel("round trip (µs)")
        ax.set_yscale("log")
        ax.legend()
        figures.save(fig, path, dpi=120)

    write_outputs(out, "kernels", payload, table, plot)
    return 0


def cmd_overhead(args: argparse.Namespace) -> int:
    import paam
    out = Path(args.out)
    n = 1024
    data = np.random.default_rng(5).standard_normal(2 * n, dtype=np.float32).view(np.uint8)
    results: dict[str, Any] = {}
    with paam.testing.start_server(backend=args.backend, buckets=args.buckets,
                                   extra_args=args.server_args.split()) as srv:
        for wait in args.waits:
            c = make_client(100, {"vector_add": (data.size, 4 * n)}, direct=False, socket=srv.socket_path, wait=wait,
                            backend=args.backend)
            c.input_buffer("vector_add")[:data.size] = data
            stages: dict[str, list[float]] = {f"{a}->{b}": [] for a, b in zip(STAGES, STAGES[1:])}
            rt, total = [], []
            for i in range(args.warmup + args.iters):
                t0 = time.perf_counter_ns()
                c.request_raw("vector_add", data.size, [n])
                t1 = time.perf_counter_ns()
                if i < args.warmup:
                    continue
                ts = c.timestamps("vector_add")
                rt.append((t1 - t0) / 1e3)
                if all(ts.get(s) for s in STAGES):
                    total.append((ts["woken"] - ts["submitted"]) / 1e3)
                    for a, b in zip(STAGES, STAGES[1:]):
                        stages[f"{a}->{b}"].append((ts[b] - ts[a]) / 1e3)
            c.close()
            results[wait] = {"round_trip_us": stats(rt), "submitted_to_woken_us": stats(total),
                             "stages_us": {k: stats(v) for k, v in stages.items()}}
    d = make_client(100, {"vector_add": (data.size, 4 * n)}, direct=True, socket=None, wait="spin",
                    backend=args.backend)
    d.input_buffer("vector_add")[:data.size] = data
    rt = []
    for i in range(args.warmup + args.iters):
        t0 = time.perf_counter_ns()
        d.request_raw("vector_add", data.size, [n])
        t1 = time.perf_counter_ns()
        if i >= args.warmup:
            rt.append((t1 - t0) / 1e3)
    d.close()
    results["direct"] = {"round_trip_us": stats(rt)}
    payload = payload_header(args, "gpu-overhead") | {"kernel": f"vector_add n={n}", "iters": args.iters,
                                                      "server_args": args.server_args, "results": results}
    rows = []
    for wait in args.waits:
        r = results[wait]
        st = r["stages_us"]
        dev = st["device_start->device_end"].get("p50", float("nan"))
        rows.append([wait, r["round_trip_us"]["p50"], r["round_trip_us"]["p99"],
                     r["submitted_to_woken_us"].get("p50", float("nan")),
                     r["round_trip_us"]["p50"] - results["direct"]["round_trip_us"]["p50"], dev] +
                    [st[k].get("p50", float("nan")) for k in st])
    rows.append(["direct", results["direct"]["round_trip_us"]["p50"], results["direct"]["round_trip_us"]["p99"],
                 "", 0.0, ""] + [""] * (len(STAGES) - 1))
    table = (f"Request overhead through paamd, {args.backend} backend, vector_add n={n} (µs, p50 unless noted), "
             f"{args.iters} requests, {gpu_name()}\n\n" +
             md_table(["wait", "round trip p50", "round trip p99", "submitted→woken", "Δ vs direct", "kernel"] +
                      [k for k in results[args.waits[0]]["stages_us"]], rows))

    def plot(path: Path) -> None:
        plt = figures.pyplot()
        fig, ax = plt.subplots(figsize=(8, 3.5))
        keys = list(results[args.waits[0]]["stages_us"])
        for i, wait in enumerate(args.waits):
            left = 0.0
            for j, k in enumerate(keys):
                v = results[wait]["stages_us"][k].get("p50", 0.0)
                ax.barh(i, v, left=left, color=f"C{j}", label=k if i == 0 else None)
                left += v
        ax.barh(len(args.waits), results["direct"]["round_trip_us"]["p50"], color="gray", label="direct round trip")
        ax.set_yticks(range(len(args.waits) + 1), list(args.waits) + ["direct"])
        ax.set_xlabel("µs (p50 per stage)")
        ax.legend(fontsize=7, loc="lower right")
        figures.save(fig, path, dpi=120)

    write_outputs(out, "overhead", payload, table, plot)
    return 0
