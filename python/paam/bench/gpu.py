"""GPU measurements (issue 4): ``paam bench gpu-*`` sub-commands.

Each sub-command writes ``<name>.json`` (every figure, the command, the machine, the date),
``<name>.md`` (a table) and ``<name>.png`` (a plot) into ``--out`` (default ``results/gpu``):

``gpu-preempt``     the paper's Table I: delay of a kernel on the top-priority stream launched
                    while the same kernel runs on the lowest-priority stream, against the kernel
                    alone (mean, max, std over many iterations), through ``paam_gpu_bench``.
``gpu-kappa``       the preemption cost κ behind ``spin``: delay of a one-block kernel arriving
                    while spin holds every block slot, for several spin block lengths.
``gpu-backend``     the CUDA backend's own round trip (no server) per wait mode.
``gpu-kernels``     kernel time alone, through paamd versus direct invocation (paper Fig. 13).
``gpu-contention``  one high-priority client while N low-priority clients keep the GPU busy:
                    through paamd versus N+1 processes invoking the GPU directly.
``gpu-overhead``    request overhead through paamd with the CUDA backend, stage by stage.
``gpu-lanes``       clients of one priority releasing spins together, their bucket on one lane or
                    several (``paamd --lanes``), for spins that take part of the GPU or all of it.
``gpu-all``         all of the above into one folder.

The first three run the C++ binary ``paam_gpu_bench`` (found with ``--binary``,
``$PAAM_GPU_BENCH``, next to ``paamd``, on PATH, or in a ``build*`` folder of the source tree);
the others use :class:`paam.Client` and :func:`paam.testing.start_server`.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import multiprocessing as mp
import os
import platform
import random
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from paam import figures

KERNELS = ("matmul", "reduction", "vector_add", "histogram")

# ------------------------------------------------------------------------------------------
# helpers


def _now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _gpu_name() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().replace("\n", "; ") or "unknown GPU"
    except (OSError, subprocess.SubprocessError):
        return "unknown GPU (no nvidia-smi)"


def _machine() -> dict[str, Any]:
    return {"gpu": _gpu_name(), "host": platform.node(), "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform()}


def _stats(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return {"n": 0}
    return {"n": int(a.size), "mean": float(a.mean()), "std": float(a.std(ddof=1)) if a.size > 1 else 0.0,
            "min": float(a.min()), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
            "max": float(a.max())}


def _write(out: Path, name: str, payload: dict[str, Any], table: str, plot: Callable[[Path], None] | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(payload, indent=1))
    (out / f"{name}.md").write_text(table + "\n")
    if plot is not None:
        plot(out / f"{name}.png")
    print(table)
    print(f"wrote {out / name}.{{json,md{',png' if plot else ''}}}")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def fmt(v: Any) -> str:
        return f"{v:.2f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def find_gpu_bench(explicit: str | None = None) -> str:
    """Path of the paam_gpu_bench binary (see the module docstring for the search order)."""
    if explicit:
        return explicit
    env = os.environ.get("PAAM_GPU_BENCH")
    if env:
        return env
    for d in (Path(sysconfig.get_path("scripts")), Path(sys.prefix) / "bin"):
        if (d / "paam_gpu_bench").is_file():
            return str(d / "paam_gpu_bench")
    found = shutil.which("paam_gpu_bench")
    if found:
        return found
    root = Path(__file__).resolve().parents[3]
    builds = sorted(root.glob("build*/**/paam_gpu_bench"), key=lambda p: p.stat().st_mtime, reverse=True)
    for p in builds:
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    raise SystemExit("cannot find paam_gpu_bench: build with CUDA (cmake -DPAAM_WITH_CUDA=ON), install the "
                     "package, or pass --binary / set PAAM_GPU_BENCH")


def _run_binary(args: argparse.Namespace, sub: list[str], json_path: Path) -> dict[str, Any]:
    binary = find_gpu_bench(args.binary)
    cmd = [binary] + sub + ["--json", str(json_path)]
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{binary} exited with status {proc.returncode}")
    data = json.loads(json_path.read_text())
    data["command_binary"] = " ".join(cmd)
    return data


def _command(bench: str) -> str:
    argv = sys.argv[1:]
    for i, a in enumerate(argv):
        if a.startswith("gpu-"):
            return "paam bench " + " ".join([bench] + argv[i + 1:] if a == "gpu-all" else argv[i:])
    return "paam bench " + bench


def _header(args: argparse.Namespace, bench: str) -> dict[str, Any]:
    return {"bench": bench, "date": _now_iso(), "command": _command(bench), "machine": _machine()}


# ------------------------------------------------------------------------------------------
# gpu-preempt, gpu-kappa, gpu-backend: the C++ bench


def cmd_preempt(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = _run_binary(args, ["preempt", "--kernels", ",".join(args.kernels), "--iters", str(args.iters),
                             "--lead-us", str(args.lead_us), "--matmul", str(args.matmul)],
                      out / "preempt.raw.json")
    payload = _header(args, "gpu-preempt") | {"result": raw}
    rows = []
    for name, k in raw["kernels"].items():
        d = k["delay_us"]
        rows.append([name, k["shape"], k["alone_us"]["mean"], k["with_lp_us"]["mean"], d["mean"], d["max"],
                     d["std"], d["p99"], f"{100 * k['hp_finished_first']:.1f}%"])
    table = (f"Preemption delay (µs), {raw['iters']} iterations, LP→HP launch lead {args.lead_us} µs, "
             f"{raw['device']['name']}, stream priorities {raw['device']['stream_priority_least']}.."
             f"{raw['device']['stream_priority_greatest']}\n\n" +
             _md_table(["kernel", "shape", "alone", "with LP", "delay mean", "delay max", "delay std",
                        "delay p99", "HP ends first"], rows))

    def plot(path: Path) -> None:
        plt = figures.pyplot()
        names = list(raw["kernels"])
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
        means = [raw["kernels"][n]["delay_us"]["mean"] for n in names]
        stds = [raw["kernels"][n]["delay_us"]["std"] for n in names]
        maxs = [raw["kernels"][n]["delay_us"]["max"] for n in names]
        ax1.bar(names, means, yerr=stds, capsize=4, label="mean ± std")
        ax1.scatter(names, maxs, color="red", marker="v", zorder=3, label="max")
        ax1.set_ylabel("preemption delay (µs)")
        ax1.set_title("high-priority kernel vs. same kernel alone")
        ax1.legend()
        for n in names:
            d = np.sort(np.asarray(raw["kernels"][n]["raw_delay_us"]))
            ax2.plot(d, np.arange(1, d.size + 1) / d.size, label=n)
        ax2.set_xlabel("delay (µs)")
        ax2.set_ylabel("CDF")
        ax2.legend()
        figures.save(fig, path, dpi=120)

    _write(out, "preempt", payload, table, plot)
    return 0


def cmd_kappa(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = _run_binary(args, ["kappa", "--iters", str(args.iters), "--slices-us",
                             ",".join(str(s) for s in args.slices_us), "--lp-ms", str(args.lp_ms),
                             "--lead-us", str(args.lead_us)], out / "kappa.raw.json")
    payload = _header(args, "gpu-kappa") | {"result": raw}
    rows = [[s["slice_us"], s["alone_us"]["mean"], s["delay_us"]["mean"], s["delay_us"]["p99"],
             s["delay_us"]["max"], s["spin_ms"]["mean"]] for s in raw["slices"]]
    table = (f"κ: delay (µs) of a one-block kernel at the top stream priority while spin "
             f"({raw['lp_ms']} ms) holds the GPU, {raw['iters']} iterations, {raw['device']['name']}\n\n" +
             _md_table(["spin block (µs)", "alone", "delay mean", "delay p99", "delay max", "spin ms"], rows) +
             "\n\nspin alone, requested vs measured (GPU clock):\n\n" +
             _md_table(["requested ms", "measured ms (mean)", "max"],
                       [[s["requested_ms"], s["measured_ms"]["mean"], s["measured_ms"]["max"]]
                        for s in raw["spin_alone"]]))

    def plot(path: Path) -> None:
        plt = figures.pyplot()
        x = [s["slice_us"] for s in raw["slices"]]
        fig, ax = plt.subplots(figsize=(6, 4))
        for key, style in (("mean", "o-"), ("p99", "s--"), ("max", "v:")):
            ax.plot(x, [s["delay_us"][key] for s in raw["slices"]], style, label=key)
        ax.plot(x, x, "k-", alpha=0.3, label="delay = block length")
        ax.set_xlabel("spin block length (µs)")
        ax.set_ylabel("delay of the high-priority kernel (µs)")
        ax.set_xscale("log")
        ax.legend()
        figures.save(fig, path, dpi=120)

    _write(out, "kappa", payload, table, plot)
    return 0


def cmd_backend(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = _run_binary(args, ["backend", "--iters", str(args.iters)], out / "backend.raw.json")
    payload = _header(args, "gpu-backend") | {"result": raw}
    rows = [[m["wait"], m["load"], m["round_trip_us"]["p50"], m["round_trip_us"]["mean"],
             m["round_trip_us"]["p99"], m["round_trip_us"]["max"], m["kernel_us"]["p50"]] for m in raw["modes"]]
    table = (f"CUDA backend Run() round trip (µs), {raw['kernel']}, level 0, {raw['iters']} runs, "
             f"{raw['device']['name']}\n\n" +
             _md_table(["wait", "load", "p50", "mean", "p99", "max", "kernel p50"], rows))

    def plot(path: Path) -> None:
        plt = figures.pyplot()
        labels = [f"{m['wait']}\n{m['load']}" for m in raw["modes"]]
        fig, ax = plt.subplots(figsize=(9, 4))
        x = np.arange(len(labels))
        ax.bar(x - 0.2, [m["round_trip_us"]["p50"] for m in raw["modes"]], 0.4, label="p50")
        ax.bar(x + 0.2, [m["round_trip_us"]["p99"] for m in raw["modes"]], 0.4, label="p99")
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_ylabel("round trip (µs)")
        ax.legend()
        figures.save(fig, path, dpi=120)

    _write(out, "backend", payload, table, plot)
    return 0


# ------------------------------------------------------------------------------------------
# gpu-kernels: kernel time alone, server vs direct (paper Fig. 13)

def _kernel_cases(scale: float) -> dict[str, dict[str, Any]]:
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


def _client(priority: int, kernels: Any, *, direct: bool, socket: str | None, wait: str = "spin",
            backend: str = "cuda"):
    import paam
    if direct:
        return paam.Client(priority=priority, kernels=kernels, wait=wait, direct=True, direct_backend=backend)
    return paam.Client(priority=priority, kernels=kernels, wait=wait, socket=socket)


STAGES = ("submitted", "dequeued", "picked", "device_start", "device_end", "completed", "woken")


def _time_requests(c: Any, name: str, case: dict[str, Any], iters: int, warmup: int) -> dict[str, Any]:
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
    cases = _kernel_cases(args.scale)
    decl = {n: (max(256, c["data"].nbytes), max(256, c["out"])) for n, c in cases.items()}
    results: dict[str, dict[str, Any]] = {}
    with paam.testing.start_server(backend=args.backend, buckets=args.buckets,
                                   extra_args=args.server_args.split()) as srv:
        for mode in ("server", "direct"):
            c = _client(100, decl, direct=mode == "direct", socket=srv.socket_path, wait=args.wait,
                        backend=args.backend)
            try:
                for name, case in cases.items():
                    r = _time_requests(c, name, case, args.iters, args.warmup)
                    results.setdefault(name, {"shape": case["shape"]})[mode] = {
                        "round_trip_us": _stats(r["round_trip_us"]), "device_us": _stats(r["device_us"]),
                        "stages_us": {k: _stats(v) for k, v in r["stages_us"].items() if v}}
            finally:
                c.close()
    payload = _header(args, "gpu-kernels") | {"iters": args.iters, "wait": args.wait,
                                              "server_args": args.server_args, "kernels": results}
    rows = []
    for name, r in results.items():
        s, d = r["server"]["round_trip_us"], r["direct"]["round_trip_us"]
        rows.append([name, r["shape"], d["p50"], s["p50"], s["p50"] - d["p50"], d["mean"], s["mean"],
                     d["p99"], s["p99"], r["server"]["device_us"].get("p50", float("nan"))])
    table = (f"Kernel round trip alone (µs), paamd ({args.backend} backend, {args.buckets} buckets"
             f"{', ' + args.server_args if args.server_args else ''}) vs direct invocation, wait={args.wait}, "
             f"{args.iters} requests each, {_gpu_name()}\n\n" +
             _md_table(["kernel", "shape", "direct p50", "server p50", "Δ p50", "direct mean", "server mean",
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

    _write(out, "kernels", payload, table, plot)
    return 0


# ------------------------------------------------------------------------------------------
# gpu-contention: one high-priority client, N low-priority ones keeping the GPU busy

def _lp_worker(socket: str | None, direct: bool, priority: int, lp_ms: float, ready: Any, stop: Any,
               measuring: Any, counter: Any, backend: str) -> None:
    c = _client(priority, ["spin"], direct=direct, socket=socket, wait="suspend", backend=backend)
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
    hp = _client(1000, {args.hp_kernel: (max(256, case["data"].nbytes), max(256, case["out"]))}, direct=direct,
                 socket=socket, wait="spin", backend=args.backend)
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
    return {"latency_us": _stats(lat), "device_us": _stats(dev), "raw_latency_us": [round(x, 1) for x in lat],
            "lp_requests_per_s": counter.value / window if window else 0.0,
            "lp_gpu_busy": counter.value * args.lp_ms / 1e3 / window if window else 0.0,
            "wall_s": round(took, 2), "stage_names": [f"{a}->{b}" for a, b in zip(STAGES, STAGES[1:])],
            "raw_stages_us": stages}


def cmd_contention(args: argparse.Namespace) -> int:
    import paam
    out = Path(args.out)
    cases = _kernel_cases(args.scale)
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
    payload = _header(args, "gpu-contention") | {
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
             f"direct: N+1 processes, one context each; {args.iters} requests per point, {_gpu_name()}\n\n" +
             _md_table(["N", "mode", "p50", "p99", "max", "device p50", "LP req/s", "LP spin share"], rows))

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

    _write(out, "contention", payload, table, plot)
    return 0


# ------------------------------------------------------------------------------------------
# gpu-lanes: clients of one bucket at once, on one lane or several (paamd --lanes)

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
            clients.append(paam.Client(priority=args.priority, kernels=["spin"], wait="suspend",
                                       socket=socket, name=f"lanes-{i}"))
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
    return {"latency_ms": _stats(lat.ravel()), "makespan_ms": _stats(makespan),
            "device_ms": _stats(dev[:, keep].ravel() / 1e6),
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
    payload = _header(args, "gpu-lanes") | {
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
             + (" (no meaning on the CPU backend)" if args.backend == "cpu" else "") + f"; ms; {_gpu_name()}\n\n"
             + _md_table(["lanes", "width %", "request p50", "request p99", "makespan p50", "makespan p99",
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

    _write(out, "lanes", payload, table, plot)
    return 0


# ------------------------------------------------------------------------------------------
# gpu-overhead: request overhead through the server, stage by stage


def cmd_overhead(args: argparse.Namespace) -> int:
    import paam
    out = Path(args.out)
    n = 1024
    data = np.random.default_rng(5).standard_normal(2 * n, dtype=np.float32).view(np.uint8)
    results: dict[str, Any] = {}
    with paam.testing.start_server(backend=args.backend, buckets=args.buckets,
                                   extra_args=args.server_args.split()) as srv:
        for wait in args.waits:
            c = _client(100, {"vector_add": (data.size, 4 * n)}, direct=False, socket=srv.socket_path, wait=wait,
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
            results[wait] = {"round_trip_us": _stats(rt), "submitted_to_woken_us": _stats(total),
                             "stages_us": {k: _stats(v) for k, v in stages.items()}}
    d = _client(100, {"vector_add": (data.size, 4 * n)}, direct=True, socket=None, wait="spin",
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
    results["direct"] = {"round_trip_us": _stats(rt)}
    payload = _header(args, "gpu-overhead") | {"kernel": f"vector_add n={n}", "iters": args.iters,
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
             f"{args.iters} requests, {_gpu_name()}\n\n" +
             _md_table(["wait", "round trip p50", "round trip p99", "submitted→woken", "Δ vs direct", "kernel"] +
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

    _write(out, "overhead", payload, table, plot)
    return 0


def cmd_all(args: argparse.Namespace) -> int:
    steps = [("preempt", cmd_preempt), ("kappa", cmd_kappa), ("backend", cmd_backend),
             ("kernels", cmd_kernels), ("overhead", cmd_overhead), ("contention", cmd_contention),
             ("lanes", cmd_lanes)]
    status = 0
    for name, fn in steps:
        if name in args.skip:
            continue
        print(f"== gpu-{name}", flush=True)
        sub = argparse.Namespace(**vars(args))
        for k, v in getattr(args, f"_{name}_defaults").items():
            if getattr(sub, k, None) is None:
                setattr(sub, k, v)
        try:
            status |= fn(sub)
        except SystemExit as exc:  # keep going: report which step failed
            print(f"gpu-{name} failed: {exc}", file=sys.stderr)
            status = 1
    return status


# ------------------------------------------------------------------------------------------
# registration

_DEFAULTS = {
    "preempt": {"iters": 20000, "lead_us": 0.0, "kernels": list(KERNELS), "matmul": 1024},
    "kappa": {"iters": 500, "slices_us": [5.0, 10.0, 20.0, 50.0, 100.0], "lp_ms": 2.0, "lead_us": 0.0},
    "backend": {"iters": 5000},
    "kernels": {"backend": "cuda", "iters": 300, "warmup": 20, "buckets": 6, "wait": "spin", "scale": 1.0,
                "server_args": ""},
    "overhead": {"backend": "cuda", "iters": 2000, "warmup": 50, "buckets": 6, "waits": ["spin", "suspend"],
                 "server_args": ""},
    "contention": {"backend": "cuda", "iters": 400, "warmup": 10, "buckets": 6, "clients": [0, 1, 2, 4], "lp_ms": 5.0,
                   "hp_kernel": "matmul", "gap_ms": 2.0, "scale": 1.0, "lp_priority": 10, "server_args": ""},
    "lanes": {"backend": "cuda", "iters": 300, "warmup": 10, "clients": 2, "ms": 2.0, "widths": [25, 50, 100],
              "lanes": [1, 2], "priority": 10, "server_args": ""},
}


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="results/gpu", help="results folder (default: results/gpu)")
    p.add_argument("--binary", default=None, help="path of paam_gpu_bench")


def _backend_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="cuda", choices=["cuda", "cpu"],
                   help="server and direct-mode backend (cpu: the same bench without a GPU)")


def _add(sub: Any, name: str, fn: Callable[[argparse.Namespace], int], help_text: str,
         extra: Callable[[argparse.ArgumentParser, dict[str, Any]], None]) -> None:
    p = sub.add_parser(f"gpu-{name}", help=help_text, description=help_text)
    _common(p)
    extra(p, _DEFAULTS[name])
    p.set_defaults(func=fn)


def register(bench_subparsers: Any) -> None:
    """Adds the gpu-* sub-commands to ``paam bench``'s sub-parsers."""
    s = bench_subparsers

    def preempt(p, d):
        p.add_argument("--iters", type=int, default=d["iters"])
        p.add_argument("--lead-us", type=float, default=d["lead_us"],
                       help="host wait between the low- and high-priority launches (paper: 0)")
        p.add_argument("--kernels", nargs="+", default=d["kernels"], choices=KERNELS)
        p.add_argument("--matmul", type=int, default=d["matmul"], help="matmul size m=k=n")

    def kappa(p, d):
        p.add_argument("--iters", type=int, default=d["iters"])
        p.add_argument("--slices-us", type=float, nargs="+", default=d["slices_us"])
        p.add_argument("--lp-ms", type=float, default=d["lp_ms"])
        p.add_argument("--lead-us", type=float, default=d["lead_us"])

    def backend(p, d):
        p.add_argument("--iters", type=int, default=d["iters"])

    def kernels(p, d):
        _backend_arg(p)
        p.add_argument("--iters", type=int, default=d["iters"])
        p.add_argument("--warmup", type=int, default=d["warmup"])
        p.add_argument("--buckets", type=int, default=d["buckets"])
        p.add_argument("--wait", default=d["wait"], choices=["spin", "suspend", "hybrid"])
        p.add_argument("--scale", type=float, default=d["scale"], help="multiplies the problem sizes")
        p.add_argument("--server-args", default=d["server_args"], help="extra paamd arguments, e.g. '--poll-us 1000'")

    def overhead(p, d):
        _backend_arg(p)
        p.add_argument("--iters", type=int, default=d["iters"])
        p.add_argument("--warmup", type=int, default=d["warmup"])
        p.add_argument("--buckets", type=int, default=d["buckets"])
        p.add_argument("--waits", nargs="+", default=d["waits"], choices=["spin", "suspend", "hybrid"])
        p.add_argument("--server-args", default=d["server_args"], help="extra paamd arguments")

    def contention(p, d):
        _backend_arg(p)
        p.add_argument("--iters", type=int, default=d["iters"], help="high-priority requests per point")
        p.add_argument("--warmup", type=int, default=d["warmup"])
        p.add_argument("--buckets", type=int, default=d["buckets"])
        p.add_argument("--clients", type=int, nargs="+", default=d["clients"], help="values of N")
        p.add_argument("--lp-ms", type=float, default=d["lp_ms"], help="low-priority spin length")
        p.add_argument("--hp-kernel", default=d["hp_kernel"])
        p.add_argument("--lp-priority", type=int, default=d["lp_priority"],
                       help="chain priority of every low-priority client (the high one has 1000)")
        p.add_argument("--server-args", default=d["server_args"], help="extra paamd arguments")
        p.add_argument("--gap-ms", type=float, default=d["gap_ms"],
                       help="random pause (0..gap) before each high-priority request")
        p.add_argument("--scale", type=float, default=d["scale"])

    def lanes(p, d):
        _backend_arg(p)
        p.add_argument("--iters", type=int, default=d["iters"], help="releases per point")
        p.add_argument("--warmup", type=int, default=d["warmup"])
        p.add_argument("--clients", type=int, default=d["clients"], help="clients of the one priority")
        p.add_argument("--ms", type=float, default=d["ms"], help="spin length")
        p.add_argument("--widths", type=int, nargs="+", default=d["widths"],
                       help="share of the GPU's block slots each spin takes, percent")
        p.add_argument("--lanes", type=int, nargs="+", default=d["lanes"], help="paamd --lanes for the bucket")
        p.add_argument("--priority", type=int, default=d["priority"])
        p.add_argument("--server-args", default=d["server_args"], help="extra paamd arguments")

    _add(s, "preempt", cmd_preempt, "GPU preemption delay between stream priorities (paper Table I)", preempt)
    _add(s, "kappa", cmd_kappa, "preemption cost κ while spin holds the GPU, per spin block length", kappa)
    _add(s, "backend", cmd_backend, "CUDA backend round trip without the server, per wait mode", backend)
    _add(s, "kernels", cmd_kernels, "kernel time alone: paamd vs direct invocation (paper Fig. 13)", kernels)
    _add(s, "overhead", cmd_overhead, "request overhead through paamd with the CUDA backend", overhead)
    _add(s, "contention", cmd_contention,
         "high-priority latency under N low-priority clients: paamd vs direct processes", contention)
    _add(s, "lanes", cmd_lanes,
         "clients of one bucket at once on one lane or several, for spins narrower or wider than the GPU", lanes)

    p = s.add_parser("gpu-all", help="every gpu-* bench with its defaults, into one folder")
    _common(p)
    p.add_argument("--skip", nargs="*", default=[], choices=list(_DEFAULTS))
    p.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run)")
    p.set_defaults(func=_all_entry)


def _all_entry(args: argparse.Namespace) -> int:
    for name, d in _DEFAULTS.items():
        d = dict(d)
        if args.quick and "iters" in d:
            d["iters"] = max(20, d["iters"] // 20)
        setattr(args, f"_{name}_defaults", d)
    return cmd_all(args)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m paam.bench.gpu gpu-…``: the same sub-commands without the paam CLI."""
    parser = argparse.ArgumentParser(prog="python -m paam.bench.gpu")
    register(parser.add_subparsers(dest="bench", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
