"""``paam kernels``: list the built-in kernels and their signatures."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kernels", help="list the built-in kernels")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from .. import _core
    kernels = _core.builtin_kernels()
    width = max(len(n) for n, _ in kernels)
    for name, sig in kernels:
        print(f"{name:<{width}}  {sig}")
    print("\nUser kernels load from shared libraries: paamd --plugin lib.so (see core/include/paam/kernel_abi.h).")
    return 0
