"""``paam serve``: run paamd in the foreground (all options pass through to paamd)."""
from __future__ import annotations

import argparse
import os


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the accelerator server (paamd) in the foreground",
                       description="Runs paamd; every option is passed through (see `paam serve --help`).",
                       add_help=False)
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..testing import find_paamd
    paamd = find_paamd()
    os.execv(paamd, [paamd, *args.args])
    return 0  # not reached
