#!/usr/bin/env python3
"""The figures of docs/observability.md: a frame of `paam top` and a `paam trace --plot`
timeline, from a real paamd under load.

Starts paamd (CPU backend, 3 buckets, admission by analysis) on a private socket, three client
processes of different priorities with timing models (perception: `spin` 2 ms every 10 ms at
priority 9; planner: `matmul` 128×128 every 20 ms at priority 5; logger: best-effort `spin`
5 ms back to back at priority 1), lets them run, then runs
`paam trace --duration D -o OUT/trace.json --plot OUT/observability_trace.png` and renders
`paam top --once`'s frame into OUT/observability_top.png (rich's SVG export, to PNG with
cairosvg where installed, else the frame's text drawn with matplotlib).

    .venv/bin/python scripts/observability_figures.py [--out DIR] [--duration 0.4]
    .venv/bin/python scripts/observability_figures.py --out docs/img --render-top SNAPSHOT.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CLIENT = r"""
import json, sys, time, numpy as np, paam
socket, name, prio, kernel, period_ms, arg, timing = sys.argv[1:8]
prio, period = int(prio), float(period_ms) / 1000
timing = paam.TimingModel(**json.loads(timing))
with paam.Client(priority=prio, kernels=[kernel], socket=socket, name=name, timing=timing) as c:
    a = np.ones((int(arg), int(arg)), np.float32) if kernel == "matmul" else None
    print("ready", flush=True)
    nxt = time.monotonic()
    while True:
        if kernel == "spin":
            c.request("spin", duration_ms=float(arg))
        else:
            c.request("matmul", a, a)
        nxt += period
        time.sleep(max(0.0, nxt - time.monotonic()))
"""

# name, priority, kernel, period (ms; 0: back to back), spin ms or matmul size, timing model
CLIENTS = [("perception", 9, "spin", 10, "2",
            dict(chain="perception", period_ms=10, cpu_wcet_ms=0.5, segments_ms=[2.0],
                 executor="ex1", executor_cpu=0, executor_priority=90)),
           ("planner", 5, "matmul", 20, "128",
            dict(chain="planner", period_ms=20, cpu_wcet_ms=0.5, segments_ms=[1.0],
                 executor="ex2", executor_cpu=1, executor_priority=80)),
           ("logger", 1, "spin", 0, "5",
            dict(chain="logger", period_ms=10, segments_ms=[5.0], best_effort=True,
                 executor="ex3", executor_cpu=1, executor_priority=10))]


def top_png(snap: dict, path: str, width: int = 118) -> None:
    from rich.console import Console

    from paam.observe_tools.top_view import render
    console = Console(record=True, width=width, file=open(os.devnull, "w"), force_terminal=True,
                      color_system="truecolor")
    console.print(render(snap, note="q or Ctrl-C: quit"))
    try:
        import cairosvg
    except ImportError:
        cairosvg = None
    if cairosvg is not None:
        # DejaVu Sans Mono is the monospace font fontconfig has where rich's Fira Code is absent
        svg = console.export_svg(title="paam top", font_aspect_ratio=0.602).replace(
            '"Fira Code"', '"DejaVu Sans Mono"')
        cairosvg.svg2png(bytestring=svg.encode(), write_to=path, output_width=1100)
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    text = console.export_text()
    lines = text.splitlines()
    fig = plt.figure(figsize=(width * 0.075, len(lines) * 0.16 + 0.3), dpi=100)
    fig.text(0.01, 0.99, text, family="monospace", fontsize=8, va="top")
    fig.savefig(path)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/img")
    ap.add_argument("--duration", type=float, default=0.4, help="seconds of trace to plot")
    ap.add_argument("--warmup", type=float, default=3.0, help="seconds of load before recording")
    ap.add_argument("--save-snapshot", metavar="JSON",
                    help="also save the statistics snapshot that the top frame shows")
    ap.add_argument("--render-top", metavar="JSON",
                    help="only draw OUT/observability_top.png from a snapshot saved with "
                         "--save-snapshot (e.g. on a machine without cairosvg)")
    args = ap.parse_args()
    if args.render_top:
        with open(args.render_top) as f:
            top_png(json.load(f), os.path.join(args.out, "observability_top.png"))
        return 0
    import paam
    from paam import observe
    os.makedirs(args.out, exist_ok=True)
    procs = []
    with paam.testing.start_server(buckets=3, backend="cpu", admission="analysis") as srv:
        try:
            for name, prio, kernel, period, arg, timing in CLIENTS:
                p = subprocess.Popen([sys.executable, "-c", CLIENT, srv.socket_path, name,
                                      str(prio), kernel, str(period), arg, json.dumps(timing)],
                                     stdout=subprocess.PIPE, text=True)
                procs.append(p)
                if p.stdout.readline().strip() != "ready":
                    raise SystemExit(f"client {name} did not start")
            print(f"paamd pid {srv.pid}, 3 clients running; {args.warmup:g} s of load",
                  flush=True)
            time.sleep(args.warmup)
            with tempfile.TemporaryDirectory() as tmp:
                trace_png = os.path.join(args.out, "observability_trace.png")
                cmd = [sys.executable, "-m", "paam.cli", "trace", "--duration",
                       str(args.duration), "-o", os.path.join(tmp, "trace.json"),
                       "--socket", srv.socket_path, "--plot", trace_png]
                print("$ paam " + " ".join(cmd[3:]), flush=True)
                subprocess.run(cmd, check=True)
            snap = observe.stats(srv.socket_path)
            if args.save_snapshot:
                with open(args.save_snapshot, "w") as f:
                    json.dump(snap, f, indent=1)
            top = os.path.join(args.out, "observability_top.png")
            top_png(snap, top)
            print(f"wrote {top}")
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
