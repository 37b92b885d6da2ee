"""The ``paam`` command line.

Each sub-command lives in its own module, which exposes ``register(subparsers)``; that
function adds its parser and sets ``func`` (called with the parsed namespace, returning the
exit status). Add a module to ``_COMMAND_MODULES`` to add a command.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# module path, in the order the commands appear in --help
_COMMAND_MODULES = [
    "paam.commands.serve",
    "paam.commands.demo",
    "paam.commands.kernels",
    "paam.bench.cli",
    "paam.analysis.cli",
    "paam.ros.cli",
]


def _register_experiments(sub: argparse._SubParsersAction) -> None:
    """``paam eval``: the paper's experiments live in the ``paam_experiments`` annex
    (``experiments/`` in the repository), installed beside paam by ``make install``."""
    try:
        from paam_experiments.cli import register
    except ImportError as err:
        if getattr(err, "name", None) not in ("paam_experiments", "paam_experiments.cli"):
            raise
        p = sub.add_parser("eval", help="the paper's experiments (needs the experiments annex)")
        p.add_argument("rest", nargs=argparse.REMAINDER)

        def missing(_args: argparse.Namespace) -> int:
            print("paam eval: the experiments annex is not installed; from a checkout of paam run "
                  "`make install` (or `pip install ./experiments`)", file=sys.stderr)
            return 2
        p.set_defaults(func=missing)
        return
    register(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paam",
        description="Priority-driven accelerator access management (PAAM).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    _register_experiments(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["serve"]:  # every option belongs to paamd, none to argparse
        from .commands.serve import exec_paamd
        return exec_paamd(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `paam analyze ... | head`: the reader left; not an error of ours
        sys.stdout = None  # nothing more to flush at exit
        return 0


if __name__ == "__main__":
    sys.exit(main())
