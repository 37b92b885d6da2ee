"""``paam eval <experiment>``: the PAAM paper's experiments (see docs/evaluation.md).

Each experiment is one command that runs the workload, writes raw data (CSV/JSON/NPZ), draws
its figures (PNG) and prints a summary table into ``results/eval/<name>/``. ``--quick`` is the
CI smoke scale; ``--backend cuda`` with the default sizes is the full run for a GPU machine.
Registering imports neither ROS 2 nor matplotlib.
"""
from __future__ import annotations

import argparse
import importlib

# experiment name -> (module, one-line help)
EXPERIMENTS = {
    "wait-strategies": ("paam_experiments.wait_strategies",
                        "spin / suspend / hybrid clients vs direct invocation (COSMIC study)"),
    "overhead": ("paam_experiments.overhead",
                 "per-stage request overhead, local shared memory and remote ROS 2 (Fig. 12)"),
    "activation": ("paam_experiments.activation",
                   "activation latency of periodic callbacks under load (cyclictest-style)"),
    "case-study-1": ("paam_experiments.case_study1.cli",
                     "case study 1 as ROS 2 processes: ROS 2 / PiCAS / PAAM vs the bound "
                     "(Figs. 9-10)"),
    "case-study-2": ("paam_experiments.case_study2",
                     "case study 2: the Autoware reference system in rclpy, 4ST/MT x ROS 2 / "
                     "PiCAS / PAAM (Fig. 11)"),
    "edf": ("paam_experiments.edf",
            "fixed priority vs EDF inside a bucket, and the CPU fallback of multi-version "
            "kernels, on constructed chain sets"),
    "history": ("paam_experiments.history",
                "every case-study run under a results tree at a glance: maxima, reductions, "
                "bounds"),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval", help="evaluation experiments (paper figures) into results/eval/",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    sub.required = True
    for name, (module, helptext) in EXPERIMENTS.items():
        mod = importlib.import_module(module)
        s = sub.add_parser(name, help=helptext, description=mod.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(s)
        s.set_defaults(func=mod.run)
