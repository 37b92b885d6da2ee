"""``paam trace``: record every request paamd runs for a while, as a Chrome trace-event file
(ui.perfetto.dev, chrome://tracing) and optionally a timeline picture."""
from __future__ import annotations

import argparse
import json
import os
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "trace", help="record paamd's requests as a Perfetto/Chrome timeline",
        description="Records every request paamd completes for --duration seconds (its stage "
                    "stamps: submitted, dequeued, picked, device start/end, completed) and "
                    "writes Chrome trace-event JSON: a track per lane with each request and its "
                    "kernel on the device, a track per client, and a flow from each submit to "
                    "the lane that ran it. Open it in https://ui.perfetto.dev. Ctrl-C stops "
                    "early and writes what was recorded.")
    p.add_argument("--duration", type=float, required=True, help="seconds to record")
    p.add_argument("-o", "--output", required=True, help="the trace file to write (JSON)")
    p.add_argument("--socket", default=None,
                   help="paamd's socket (default: $PAAM_SOCKET or the default path)")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="also draw the timeline into this picture (PNG, or any format "
                        "matplotlib writes)")
    p.set_defaults(func=_run)


def _writable(path: str) -> str | None:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"no folder {folder} for {path}"
    if not os.access(folder, os.W_OK):
        return f"cannot write into {folder}"
    return None


def _run(args: argparse.Namespace) -> int:
    from ..observe_tools.recorder import record
    from ..observe_tools.source import ToolError, socket_path, stats_fetcher
    from ..observe_tools.trace_events import to_trace_events
    if not args.duration > 0:
        print(f"paam trace: --duration must be positive, not {args.duration:g}", file=sys.stderr)
        return 2
    for opt, path in (("-o", args.output), ("--plot", args.plot)):
        why = path is not None and _writable(path)
        if why:
            print(f"paam trace: {opt}: {why}", file=sys.stderr)
            return 2
    socket = socket_path(args.socket)
    tty = sys.stderr.isatty()
    shown = [0.0]

    def progress(elapsed: float, n: int) -> None:
        line = f"recording {elapsed:.1f}/{args.duration:g} s: {n} requests"
        if tty:
            print(f"\r{line}", end="", file=sys.stderr, flush=True)
        elif elapsed - shown[0] >= 5.0:  # a log, not a terminal: a line every 5 s
            shown[0] = elapsed
            print(line, file=sys.stderr, flush=True)

    try:
        server = stats_fetcher(socket)()["server"]  # paamd runs, and which pid it is
        records, dropped = record(
            socket, args.duration, progress=progress,
            on_start=lambda: print(f"recording paamd (pid {server['pid']}) at {socket} for "
                                   f"{args.duration:g} s", file=sys.stderr, flush=True))
    except ToolError as err:
        if tty:
            print(file=sys.stderr)
        print(f"paam trace: {err}", file=sys.stderr)
        return 2
    if tty:
        print(file=sys.stderr)
    if len(records) > 20000:
        print(f"writing {args.output} ({len(records)} requests)", file=sys.stderr, flush=True)
    doc = to_trace_events(records, server_pid=int(server["pid"]), dropped=dropped,
                          meta={"socket": socket, "duration_s": args.duration,
                                "backend": server.get("backend")})
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"{len(records)} requests recorded, {dropped} dropped; wrote {args.output} "
          "(open it in https://ui.perfetto.dev)")
    if dropped:
        print(f"paam trace: paamd's trace ring overflowed: {dropped} requests are missing",
              file=sys.stderr)
    if args.plot:
        from ..observe_tools.timeline_plot import plot_timeline
        plot_timeline(records, args.plot)
        print(f"wrote {args.plot}")
    return 0
