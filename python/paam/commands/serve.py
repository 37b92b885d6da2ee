"""``paam serve``: run paamd in the foreground (all options pass through to paamd)."""
from __future__ import annotations

import argparse
import os


def register(sub: argparse._SubParsersAction) -> None:
    # Listed in ``paam --help`` only: ``paam.cli.main`` hands ``paam serve ...`` to :func:`exec_paamd`
    # before argparse sees it, since argparse cannot pass options such as ``--buckets 3`` through
    # a sub-command untouched.
    p = sub.add_parser("serve", help="run the accelerator server (paamd) in the foreground; "
                       "every option goes to paamd (`paam serve --help`)", add_help=False)
    p.set_defaults(func=lambda args: exec_paamd([]))


def exec_paamd(argv: list[str]) -> int:
    """Replace this process with paamd, passing ``argv`` through unchanged."""
    from ..testing import find_paamd
    paamd = find_paamd()
    os.execv(paamd, [paamd, *argv])
    return 0  # not reached
