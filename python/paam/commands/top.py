"""``paam top``: a live view of paamd — lanes, clients by priority, bounds and overheads."""
from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "top", help="live view of paamd: queues, lanes, clients, bounds",
        description="Shows paamd's live statistics, refreshed every --interval seconds: its "
                    "lanes with queue depth, the request in flight, served requests, total "
                    "latency (p50/p99/max over the server's window) and busy share; its clients, "
                    "most critical first, with their latency, analysed bound, worst observed "
                    "response and bound violations; and ε/κ as the analysis used them against "
                    "those observed. Press q or Ctrl-C to quit.")
    p.add_argument("--socket", default=None,
                   help="paamd's socket (default: $PAAM_SOCKET or the default path)")
    p.add_argument("--interval", type=float, default=1.0,
                   help="seconds between refreshes (default 1)")
    p.add_argument("--once", action="store_true",
                   help="print one snapshot and exit (a rendered frame, or JSON with --json)")
    p.add_argument("--json", action="store_true",
                   help="with --once: print the snapshot as JSON (paam.observe's schema)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..observe_tools.source import ToolError, socket_path, stats_fetcher
    if not args.interval > 0:
        print(f"paam top: --interval must be positive, not {args.interval:g}", file=sys.stderr)
        return 2
    if args.json and not args.once:
        print("paam top: --json needs --once (a live view is not JSON)", file=sys.stderr)
        return 2
    socket = socket_path(args.socket)
    try:
        fetch = stats_fetcher(socket)
        if args.once:
            snap = fetch()
            if args.json:
                json.dump(snap, sys.stdout, indent=2)
                sys.stdout.write("\n")
            else:
                from rich.console import Console

                from ..observe_tools.top_view import render
                Console().print(render(snap))
            return 0
        from rich.console import Console

        from ..observe_tools.live import TerminalKeys, run_live
        console = Console()
        with TerminalKeys() as keys:
            return run_live(fetch, interval=args.interval, console=console, keys=keys,
                            screen=console.is_terminal)
    except ToolError as err:
        print(f"paam top: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C is how a live view ends: not an error
        return 0
