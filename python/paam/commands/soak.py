"""``paam soak``: the fault and soak test (clients killed and paamd restarted under load; every
request accounted for; paamd's descriptors and mappings checked). The logic is in
:mod:`paam.soak`."""
from __future__ import annotations

import argparse
import json
import os
import sys


def _number(option: str, *, positive: bool, integer: bool = False, most: float | None = None):
    """An argparse type that names ``option`` and the rule when the value breaks it."""
    rule = ("a positive" if positive else "0 or a positive") + (" whole number" if integer
                                                                   else " number")

    def parse(text: str):
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} must be {rule}, got {text!r}") from None
        if value != value or (value <= 0 if positive else value < 0) or \
                (most is not None and value > most):
            bound = f" (at most {most:g})" if most is not None else ""
            raise argparse.ArgumentTypeError(f"{option} must be {rule}{bound}, got {text!r}")
        return value
    return parse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "soak", help="fault and soak test: kill clients and restart paamd under load, count "
                     "lost, duplicated and wrong answers, check paamd for leaks",
        description="Starts paamd on a private socket and N client processes that send "
                    "vector_add and spin requests and check every answer. For --duration "
                    "seconds it SIGKILLs a random client about every --kill-every seconds "
                    "(starting a new one) and restarts paamd about every --restart-every "
                    "seconds, alternately by SIGKILL and SIGTERM. Then the clients leave and "
                    "the last paamd's descriptors and memfd mappings must be back to a fresh "
                    "paamd's. Exit status 1 when a request was lost, duplicated or wrong, a "
                    "client crashed, or paamd leaked; 0 otherwise.")
    p.add_argument("--duration", required=True, metavar="SECONDS",
                   type=_number("--duration", positive=True),
                   help="how long to inject faults under load")
    p.add_argument("--clients", default=4, metavar="N",
                   type=_number("--clients", positive=True, integer=True, most=256),
                   help="client processes (default 4)")
    p.add_argument("--seed", default=0, type=int, metavar="K",
                   help="seed of the faults and the requests (default 0)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"],
                   help="paamd's backend (default cpu)")
    p.add_argument("--buckets", default=2, metavar="N",
                   type=_number("--buckets", positive=True, integer=True),
                   help="paamd's buckets; clients pick random priorities (default 2)")
    p.add_argument("--kill-every", default=2.0, metavar="SECONDS",
                   type=_number("--kill-every", positive=False),
                   help="mean time between client kills; 0: none (default 2)")
    p.add_argument("--restart-every", default=10.0, metavar="SECONDS",
                   type=_number("--restart-every", positive=False),
                   help="mean time between paamd restarts, in the first three quarters of "
                        "the run; 0: none (default 10)")
    p.add_argument("--answer-timeout", default=60.0, metavar="SECONDS",
                   type=_number("--answer-timeout", positive=True),
                   help="a request unanswered this long counts as lost (default 60)")
    p.add_argument("--json", metavar="FILE", help="also write the report here as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..errors import PaamError
    from ..soak import SoakConfig, format_report, run_soak

    if args.json:
        parent = os.path.dirname(os.path.abspath(args.json))
        if not os.path.isdir(parent):
            print(f"paam soak: --json {args.json}: directory {parent} does not exist",
                  file=sys.stderr)
            return 2
    cfg = SoakConfig(duration_s=args.duration, clients=args.clients, seed=args.seed,
                     backend=args.backend, buckets=args.buckets, kill_every_s=args.kill_every,
                     restart_every_s=args.restart_every, answer_timeout_s=args.answer_timeout,
                     progress_every_s=min(5.0, max(1.0, args.duration / 5)))
    try:
        report = run_soak(cfg)
    except (PaamError, OSError, RuntimeError, ValueError) as exc:
        print(f"paam soak: {exc}", file=sys.stderr)
        return 2
    print(format_report(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
    return 0 if report["ok"] else 1
