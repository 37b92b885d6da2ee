"""``paam eval overhead``: where a request's time goes, stage by stage (the paper's Fig. 12).

``--requests`` requests of the ``spin`` kernel with a zero duration (a control message only, no
payload: the paper's 72-byte request) along three paths, one after the other, each against the
same fresh paamd:

* ``local C++``: the native client (``paam_overhead_bench``, the paper's clients are C++; it
  sends the ``noop`` kernel, so its kernel stage is empty);
* ``local Python``: ``paam.Client`` from Python, the way an rclpy callback uses it;
* ``remote ROS 2``: ``paam.ros.RemoteClient`` → ``paam bridge`` (another process) → paamd,
  the request and its response as ROS 2 messages (DDS). Skipped, with the reason, when ROS 2 is
  not installed.

Stages come from each request's timestamps (CLOCK_MONOTONIC; one host, so the bridge's and the
remote client's clocks agree): request transport (remote only, remote send → bridge receive),
bridge in (bridge receive → local submit), doorbell + dispatch (submit → dequeue), queue + worker
wake (dequeue → picked), launch (picked → device start), kernel, completion (device end →
completed), client wake (completed → woken), bridge out (woken → bridge reply), response
transport (bridge reply → remote receive), and the overhead, the round trip less the kernel.
For each: best / mean / 99th percentile / max (µs). Writes ``stages.csv``, ``summary.json``,
``raw_<path>.csv`` (per-request stage times) and ``stages.png``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from paam.figures import pyplot, save
from paam_experiments.common.cpus import device_cpu, host_cpus, pin_this_thread
from paam_experiments.common.machine import machine_line, machine_meta
from paam_experiments.common.procs import stop_processes
from paam_experiments.common.report import fmt, out_dir, table, write_csv, write_json
from paam_experiments.common.stats import summarize

LOCAL_STAGES = [
    ("doorbell + dispatch", "submitted", "dequeued"),
    ("queue + worker wake", "dequeued", "picked"),
    ("launch", "picked", "device_start"),
    ("kernel", "device_start", "device_end"),
    ("completion", "device_end", "completed"),
    ("client wake", "completed", "woken"),
]
REMOTE_STAGES = ([("request transport (DDS)", "remote_sent", "bridge_received"),
                  ("bridge in", "bridge_received", "submitted")] + LOCAL_STAGES +
                 [("bridge out", "woken", "bridge_replied"),
                  ("response transport (DDS)", "bridge_replied", "remote_received")])
# The C++ bench's stage names, in LOCAL_STAGES order.
NATIVE_STAGES = ["submit_to_dequeue", "queue_and_worker_wake", "launch", "kernel", "completion",
                 "client_wake"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--requests", type=int, default=100_000,
                   help="requests per local path (default 100000); the remote path runs "
                        "a tenth of it, at least 200")
    p.add_argument("--wait", default="suspend", choices=["spin", "suspend", "hybrid"],
                   help="how the clients (and the bridge's local client) wait (default suspend)")
    p.add_argument("--paths", default="local-cpp,local-python,remote-ros2",
                   help="comma-separated subset of local-cpp, local-python, remote-ros2")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--quick", action="store_true", help="CI smoke scale: 300 requests per path")
    p.add_argument("--out", default="results/eval/overhead")


def _stage_matrix(stamps: list[dict], stages) -> dict[str, np.ndarray]:
    out = {}
    for name, a, b in stages:
        out[name] = np.array([(s[b] - s[a]) / 1e3 for s in stamps], dtype=np.float64)
    return out


def _with_totals(m: dict[str, np.ndarray], first: str, last: str, stamps: list[dict]) -> None:
    rt = np.array([(s[last] - s[first]) / 1e3 for s in stamps])
    m["round trip"] = rt
    m["overhead (round trip - kernel)"] = rt - m["kernel"]


def local_python(socket: str, n: int, wait: str, cpus: list[int]) -> dict[str, np.ndarray]:
    import paam
    pin_this_thread(cpus)
    stamps = []
    with paam.Client(priority=10, kernels=["spin"], wait=wait, socket=socket,
                     name="eval-overhead") as c:
        for i in range(n + 50):
            c.request("spin", duration_ms=0.0)
            if i >= 50:  # warm-up
                stamps.append(c.timestamps("spin"))
    m = _stage_matrix(stamps, LOCAL_STAGES)
    _with_totals(m, "submitted", "woken", stamps)
    return m


def local_cpp(socket: str, n: int, wait: str, cpus: list[int]) -> dict[str, dict[str, float]]:
    from paam.bench.overhead import _bench_binary
    cmd = [_bench_binary(), "--socket", socket, "--wait", wait, "--payload", "8",
           "--requests", str(n)]
    cmd += ["--cpu", str(cpus[0])]  # off the device core
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"paam_overhead_bench failed: {proc.stderr}")
    return json.loads(proc.stdout)


def remote_ros2(socket: str, n: int, wait: str, cpus: list[int]) -> dict[str, np.ndarray]:
    from paam.ros import RemoteClient
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(100, 200)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    name = f"paam_eval_bridge_{os.getpid()}"
    # The bridge's output goes to a file: a pipe nobody drains could fill and block it.
    log = tempfile.NamedTemporaryFile(mode="w+", prefix="paam-eval-bridge-", suffix=".log")
    bridge = subprocess.Popen([sys.executable, "-m", "paam.cli", "bridge", "--name", name,
                               "--socket", socket], stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        _wait_line(bridge, log.name, "ready", 60)
        pin_this_thread(cpus)
        stamps = []
        with RemoteClient(priority=10, kernels=["spin"], wait=wait, bridge=name,
                          connect_timeout_sec=30) as c:
            for i in range(n + 30):
                c.request("spin", duration_ms=0.0)
                if i >= 30:
                    stamps.append(dict(c.last_timestamps))
    finally:
        stop_processes([bridge], timeout=10)
        log.close()
    missing = [k for _n, a, b in REMOTE_STAGES for k in (a, b) if k not in stamps[0]]
    if missing:
        raise SystemExit(f"the bridge's response lacks timestamps {sorted(set(missing))}")
    m = _stage_matrix(stamps, REMOTE_STAGES)
    _with_totals(m, "remote_sent", "remote_received", stamps)
    return m


def _wait_line(proc: subprocess.Popen, log_path: str, text: str, timeout: float) -> None:
    """Wait until the process's log file contains ``text``."""
    deadline = time.monotonic() + timeout
    content = ""
    while time.monotonic() < deadline:
        content = Path(log_path).read_text(errors="replace")
        if text in content:
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"paam bridge did not print {text!r}: {content[-2000:]}")


def _summaries(m: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    return {k: summarize(v) for k, v in m.items()}


def run(args: argparse.Namespace) -> int:
    if args.quick:
        args.requests = min(args.requests, 300)
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    bad = [p for p in paths if p not in ("local-cpp", "local-python", "remote-ros2")]
    if bad:
        raise SystemExit(f"unknown path(s) {bad}")
    out = out_dir(args.out)
    meta = machine_meta(args.backend)
    cpus = host_cpus(args.backend)
    dev = device_cpu() if args.backend == "cpu" else None
    print(f"paam eval overhead: {args.requests} requests per local path, wait={args.wait}\n"
          f"  {machine_line(meta)}", flush=True)
    from paam.testing import start_server
    results: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    for path in paths:
        n = args.requests if path != "remote-ros2" else max(200, args.requests // 10)
        if path == "remote-ros2":
            from paam.ros import ROS_MISSING_HINT, ros_available
            if not ros_available():
                skipped[path] = ROS_MISSING_HINT
                print(f"  {path}: skipped ({ROS_MISSING_HINT})", flush=True)
                continue
        print(f"  {path}: {n} requests ...", flush=True)
        with start_server(buckets=1, backend=args.backend, device_cpu=dev) as srv:
            if path == "local-cpp":
                native = local_cpp(srv.socket_path, n, args.wait, cpus)
                st = native["stages"]
                res = {name: _native_summary(st[key]) for (name, _a, _b), key
                       in zip(LOCAL_STAGES, NATIVE_STAGES)}
                res["round trip"] = _native_summary(st["round_trip"])
                results[path] = {"n": n, "stages": res, "raw": None}
            else:
                fn = local_python if path == "local-python" else remote_ros2
                m = fn(srv.socket_path, n, args.wait, cpus)
                results[path] = {"n": n, "stages": _summaries(m), "raw": m}
                _write_raw(out / f"raw_{path}.csv", m)

    rows = []
    for path, r in results.items():
        for stage, s in r["stages"].items():
            rows.append({"path": path, "stage": stage, "n": s.get("n", r["n"]),
                         "best_us": s["min"], "mean_us": s["mean"], "p99_us": s["p99"],
                         "max_us": s["max"]})
    write_csv(out / "stages.csv", rows)
    write_json(out / "summary.json", {
        "meta": meta, "params": {"requests": args.requests, "wait": args.wait,
                                 "kernel": "spin, duration 0 (no payload)"},
        "skipped": skipped,
        "results": {p: {"n": r["n"], "stages": r["stages"]} for p, r in results.items()}})
    text = render(results, meta, args.wait, skipped)
    (out / "summary.txt").write_text(text)
    print("\n" + text)
    try:
        plot(results, out / "stages.png")
        print(f"wrote {out}/stages.csv, summary.json, summary.txt, stages.png, raw_*.csv")
    except Exception as exc:  # noqa: BLE001
        print(f"wrote {out}/stages.csv, summary.json, summary.txt (no plot: {exc})")
    return 0


def _native_summary(s: dict) -> dict[str, float]:
    return {"min": s["min_us"], "mean": s["mean_us"], "p50": s["p50_us"], "p99": s["p99_us"],
            "max": s["max_us"]}


def _write_raw(path: Path, m: dict[str, np.ndarray]) -> None:
    keys = list(m)
    with path.open("w") as f:
        f.write(",".join(k.replace(",", ";") for k in keys) + "\n")
        for row in zip(*(m[k] for k in keys)):
            f.write(",".join(f"{v:.3f}" for v in row) + "\n")


def render(results: dict, meta: dict, wait: str, skipped: dict) -> str:
    lines = [f"Request overhead by stage (µs), wait={wait}, spin kernel of 0 ms",
             machine_line(meta), ""]
    for path, r in results.items():
        rows = [[f"{path} ({r['n']} requests)", "best", "mean", "p99", "max"]]
        for stage, s in r["stages"].items():
            rows.append([stage, fmt(s["min"]), fmt(s["mean"]),
                         fmt(s["p99"]), fmt(s["max"])])
        lines += [table(rows, right=range(1, 5)), ""]
    for path, why in skipped.items():
        lines.append(f"{path}: not measured: {why}")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    plt = pyplot()
    n = len(results)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n + 1, 4.2), squeeze=False)
    for ax, (name, r) in zip(axes[0], results.items()):
        stages = [s for s in r["stages"] if s not in ("round trip", "kernel",
                                                      "overhead (round trip - kernel)")]
        y = np.arange(len(stages))
        stats = [r["stages"][s] for s in stages]
        for off, key, color in ((-0.3, "min", "#9ecae1"), (-0.1, "mean", "#4c9be8"),
                                (0.1, "p99", "#e8a04c"), (0.3, "max", "#d62728")):
            ax.barh(y + off, [max(s[key], 0.01) for s in stats], height=0.2, color=color,
                    label={"min": "best"}.get(key, key))
        ax.set_yticks(y, stages, fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("µs (log)")
        rt = r["stages"]["round trip"]
        ax.set_title(f"{name}\nround trip best {rt['min']:.0f} / mean {rt['mean']:.0f} / "
                     f"max {rt['max']:.0f} µs", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.suptitle("Overhead breakdown per request stage (Fig. 12)", fontsize=10)
    save(fig, path, dpi=100, rect=(0, 0.07, 1, 1))
