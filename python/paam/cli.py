"""The ``paam`` command line.

Each sub-command lives in its own module, which exposes ``register(subparsers)``; that
function adds its parser and sets ``func`` (called with the parsed namespace, returning the
exit status). Add a module to ``_COMMAND_MODULES`` to add a command.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# module path, in the order the commands appear in --help
_COMMAND_MODULES = [
    "paam.commands.serve",
    "paam.commands.demo",
    "paam.commands.kernels",
    "paam.commands.models",
    "paam.commands.profile",
    "paam.commands.top",
    "paam.commands.trace",
    "paam.commands.metrics",
    "paam.commands.soak",
    "paam.bench.cli",
    "paam.analysis.cli",
    "paam.ros.cli",
]


_EVAL_HELP = "evaluation experiments (paper figures) into results/eval/"


def _register_experiments(sub: argparse._SubParsersAction, load: bool) -> None:
    """``paam eval``: the paper's experiments live in the ``paam_experiments`` annex
    (``experiments/`` in the repository), installed beside paam by ``make install``. It is
    imported only when ``eval`` is the command, so no other command depends on it."""
    if load:
        try:
            from paam_experiments.cli import register
        except ImportError as err:
            if getattr(err, "name", None) not in ("paam_experiments", "paam_experiments.cli"):
                raise
        else:
            register(sub)
            return
    p = sub.add_parser("eval", help=_EVAL_HELP, add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)

    def missing(_args: argparse.Namespace) -> int:
        print("paam eval: the experiments annex is not installed; from a checkout of paam run "
              "`make install` (or `pip install ./experiments`)", file=sys.stderr)
        return 2
    p.set_defaults(func=missing)


def build_parser(with_experiments: bool = False) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paam",
        description="Priority-driven accelerator access management (PAAM).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    _register_experiments(sub, load=with_experiments)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["serve"]:  # every option belongs to paamd, none to argparse
        from .commands.serve import exec_paamd
        return exec_paamd(argv[1:])
    parser = build_parser(with_experiments=argv[:1] == ["eval"])
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `paam analyze ... | head`: the reader left; not an error of ours
        # What is still buffered goes nowhere, so flushing at exit raises nothing more (the
        # way the Python docs handle SIGPIPE).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
