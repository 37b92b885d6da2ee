"""``paam metrics``: serve paamd's live statistics to Prometheus."""
from __future__ import annotations

import argparse
import sys
import threading


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "metrics", help="serve paamd's statistics in Prometheus' text format",
        description="Serves http://ADDRESS:PORT/metrics: on each scrape it asks paamd for its "
                    "live statistics (at most once per --interval seconds) and answers them as "
                    "Prometheus metrics (paam_requests_total, paam_queue_depth, "
                    "paam_stage_latency_us, paam_client_requests_total, "
                    "paam_bound_violations_total, paam_epsilon_ms, ...; see "
                    "docs/observability.md). While paamd is not there, paam_up is 0. The "
                    "metrics name every client (its name, as the client gave it) and the "
                    "socket: bind to another address than 127.0.0.1 only where everyone who "
                    "can reach it may see them.")
    p.add_argument("--port", type=int, required=True,
                   help="TCP port to serve on (0: any free port, printed at start)")
    p.add_argument("--address", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1, this machine only; the metrics "
                        "reveal client names)")
    p.add_argument("--socket", default=None,
                   help="paamd's socket (default: $PAAM_SOCKET or the default path)")
    p.add_argument("--interval", type=float, default=1.0,
                   help="ask paamd at most once per this many seconds; scrapes in between get "
                        "the same snapshot (default 1)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..observe_tools.source import ToolError, socket_path, stats_fetcher
    if not 0 <= args.port <= 65535:
        print(f"paam metrics: --port must be 0..65535, not {args.port}", file=sys.stderr)
        return 2
    if not args.interval >= 0:
        print(f"paam metrics: --interval must be 0 or more, not {args.interval:g}",
              file=sys.stderr)
        return 2
    socket = socket_path(args.socket)
    try:
        fetch = stats_fetcher(socket)
    except ToolError as err:
        print(f"paam metrics: {err}", file=sys.stderr)
        return 2
    from prometheus_client import CollectorRegistry, start_http_server

    from ..observe_tools.prom import PaamCollector
    registry = CollectorRegistry(auto_describe=False)
    collector = PaamCollector(fetch, min_interval=args.interval)
    registry.register(collector)
    try:
        server, _thread = start_http_server(args.port, addr=args.address, registry=registry)
    except OSError as err:
        print(f"paam metrics: cannot serve on {args.address}:{args.port}: "
              f"{err.strerror or err}", file=sys.stderr)
        return 2
    port = server.server_port
    host = f"[{args.address}]" if ":" in args.address else args.address
    print(f"serving the metrics of paamd at {socket} on http://{host}:{port}/metrics "
          "(Ctrl-C to stop)", flush=True)
    try:
        fetch()
    except ToolError as err:
        print(f"paam metrics: warning: {err}; paam_up is 0 until it runs", file=sys.stderr,
              flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return 0
