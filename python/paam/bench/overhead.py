"""``paam bench overhead``: round-trip overhead of a request whose kernel does nothing.

For each wait mode (spin, suspend, hybrid) and payload (8 B, 1 MiB) it runs the native
``paam_overhead_bench`` client against a fresh paamd and reports p50 / p99 / p99.9 / max over
N requests, with the per-stage breakdown from the request timestamps. Writes overhead.json,
a table (overhead.md) and a plot (overhead.png) into the results folder.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from paam import figures

STAGES = ["submit_to_dequeue", "queue_and_worker_wake", "launch", "kernel", "completion", "client_wake"]
# Not part of the round trip: the client writing its input into the region (needed with or
# without paam; zero copy after that).
WRITE = "client_write_input"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("overhead", help="request round-trip overhead per wait mode and payload")
    p.add_argument("--requests", type=int, default=100_000, help="requests per configuration (default 100000)")
    p.add_argument("--payloads", default="8,1048576", help="payload sizes in bytes (default 8,1048576)")
    p.add_argument("--waits", default="spin,suspend,hybrid")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--poll-us", type=int, default=None,
                   help="server busy-poll window (default: paamd's, 50 with 4+ CPUs, else 0)")
    p.add_argument("--out", default="results/overhead")
    p.set_defaults(func=run)


def _bench_binary() -> str:
    for c in (Path(sysconfig.get_path("scripts")) / "paam_overhead_bench",
              Path(sys.prefix) / "bin" / "paam_overhead_bench"):
        if c.is_file():
            return str(c)
    found = shutil.which("paam_overhead_bench")
    if not found:
        raise SystemExit("paam_overhead_bench not found: install the package (make install)")
    return found


def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}"


def run(args: argparse.Namespace) -> int:
    from ..testing import start_server
    binary = _bench_binary()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ncpu = os.cpu_count() or 1
    results = []
    configs = [(w, int(p)) for w in args.waits.split(",") for p in args.payloads.split(",")]
    for i, (wait, payload) in enumerate(configs, 1):
        print(f"[{i}/{len(configs)}] wait={wait} payload={payload} B, {args.requests} requests ...", flush=True)
        # Device core = last core (cpu backend); the client stays off it.
        extra = [] if args.poll_us is None else ["--poll-us", str(args.poll_us)]
        with start_server(buckets=1, backend=args.backend, extra_args=extra) as srv:
            cmd = [binary, "--socket", srv.socket_path, "--wait", wait, "--payload", str(payload),
                   "--requests", str(args.requests)]
            if ncpu > 2:
                cmd += ["--cpu", "0"]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise SystemExit(f"benchmark failed: {proc.stderr}\nserver log:\n{srv.log()}")
            results.append(json.loads(proc.stdout))

    meta = {"date": dt.date.today().isoformat(), "machine": machine_description(), "backend": args.backend,
            "command": "paam bench overhead " + " ".join(sys.argv[3:]),
            "poll_us": args.poll_us if args.poll_us is not None else (50 if ncpu >= 4 else 0)}
    (out / "overhead.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    table = render_table(results, meta)
    (out / "overhead.md").write_text(table)
    print("\n" + table)
    try:
        _plot(results, out / "overhead.png")
        print(f"wrote {out}/overhead.json, overhead.md, overhead.png")
    except Exception as exc:  # noqa: BLE001
        print(f"wrote {out}/overhead.json, overhead.md (no plot: {exc})")
    return 0


def render_table(results: list[dict], meta: dict) -> str:
    lines = [f"Request round trip through paamd ({meta['backend']} backend, noop kernel), "
             f"{meta['machine']}, {meta['date']}", "",
             "| wait | payload | requests | p50 µs | p99 µs | p99.9 µs | max µs |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        s = r["stages"]["round_trip"]
        lines.append(f"| {r['wait']} | {_size(r['payload_bytes'])} | {r['requests']} | {s['p50_us']:.2f} | "
                     f"{s['p99_us']:.2f} | {s['p999_us']:.2f} | {s['max_us']:.1f} |")
    lines += ["", "Stage breakdown, p50 / p99 µs (from the request timestamps):", "",
              "| wait | payload | " + " | ".join(STAGES + [WRITE]) + " |",
              "|---|---|" + "---|" * (len(STAGES) + 1)]
    for r in results:
        cells = [f"{r['stages'][s]['p50_us']:.2f} / {r['stages'][s]['p99_us']:.2f}" for s in STAGES + [WRITE]]
        lines.append(f"| {r['wait']} | {_size(r['payload_bytes'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _size(n: int) -> str:
    return f"{n // (1 << 20)} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n} B"


def main(argv: list[str] | None = None) -> int:
    """``python -m paam.bench.overhead --render overhead.json``: print the table of a saved run
    (e.g. one made by scripts/device_overhead.sh on a machine without the Python package)."""
    p = argparse.ArgumentParser(prog="python -m paam.bench.overhead")
    p.add_argument("--render", required=True, help="overhead JSON written by this benchmark")
    p.add_argument("--plot", help="also write the stage plot here (PNG)")
    a = p.parse_args(argv)
    data = json.loads(Path(a.render).read_text())
    print(render_table(data["results"], data["meta"]))
    if a.plot:
        _plot(data["results"], Path(a.plot))
    return 0


def _plot(results: list[dict], path: Path) -> None:
    plt = figures.pyplot()
    import numpy as np
    fig, ax = plt.subplots(figsize=(9, 4.5))
    labels = [f"{r['wait']}\n{_size(r['payload_bytes'])}" for r in results]
    bottom = np.zeros(len(results))
    for stage in STAGES:
        vals = np.array([r["stages"][stage]["p50_us"] for r in results])
        ax.bar(labels, vals, bottom=bottom, label=stage)
        bottom += vals
    ax.scatter(labels, [r["stages"]["round_trip"]["p99_us"] for r in results], color="k", marker="_", s=400,
               label="round trip p99", zorder=3)
    ax.set_ylabel("µs (stacked stage p50s)")
    ax.set_title("paam request overhead by stage")
    ax.legend(fontsize=8)
    figures.save(fig, path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
