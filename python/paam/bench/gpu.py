"""GPU measurements: the ``paam bench gpu-*`` sub-commands (one module each; this one registers
them and runs ``gpu-all``).

Each sub-command writes ``<name>.json`` (every figure, the command, the machine, the date),
``<name>.md`` (a table) and ``<name>.png`` (a plot) into ``--out`` (default ``results/gpu``):

``gpu-preempt``     the paper's Table I per kernel kind: delay of a kernel on the top-priority
                    stream arriving while the same kernel runs on the lowest-priority stream,
                    against the kernel alone (mean, p99, max), with the low-priority kernel
                    unsliced and preemptible in slices (paamd --gpu-preempt), and what slicing
                    costs it, through ``paam_gpu_bench`` (:mod:`paam.bench.gpu_preempt`).
``gpu-kappa``       the preemption cost κ behind ``spin``: delay of a one-block kernel arriving
                    while spin holds every block slot, for several spin block lengths.
``gpu-backend``     the CUDA backend's own round trip (no server) per wait mode.
``gpu-kernels``     kernel time alone, through paamd versus direct invocation (paper Fig. 13).
``gpu-contention``  one high-priority client while N low-priority clients keep the GPU busy:
                    through paamd versus N+1 processes invoking the GPU directly.
``gpu-overhead``    request overhead through paamd with the CUDA backend, stage by stage.
``gpu-lanes``       clients of one priority releasing spins together, their bucket on one lane or
                    several (``paamd --lanes``), for spins that take part of the GPU or all of it.
``gpu-all``         all of the above into one folder.

The first three run the C++ binary ``paam_gpu_bench`` (:mod:`paam.bench.gpu_device`); the others
use :class:`paam.Client` and :func:`paam.testing.start_server` (:mod:`paam.bench.gpu_server`,
:mod:`paam.bench.gpu_contention`, :mod:`paam.bench.gpu_lanes`). What each writes:
:mod:`paam.bench.gpu_report`.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Sequence

from paam.bench.gpu_contention import cmd_contention
from paam.bench.gpu_device import KERNELS, cmd_backend, cmd_kappa, find_gpu_bench
from paam.bench.gpu_lanes import cmd_lanes
from paam.bench.gpu_preempt import cmd_preempt
from paam.bench.gpu_server import cmd_kernels, cmd_overhead

__all__ = ["cmd_all", "cmd_backend", "cmd_contention", "cmd_kappa", "cmd_kernels", "cmd_lanes",
           "cmd_overhead", "cmd_preempt", "find_gpu_bench", "main", "register"]


def cmd_all(args: argparse.Namespace) -> int:
    steps = [("preempt", cmd_preempt), ("kappa", cmd_kappa), ("backend", cmd_backend),
             ("kernels", cmd_kernels), ("overhead", cmd_overhead), ("contention", cmd_contention),
             ("lanes", cmd_lanes)]
    status = 0
    for name, fn in steps:
        if name in args.skip:
            continue
        print(f"== gpu-{name}", flush=True)
        sub = argparse.Namespace(**vars(args))
        for k, v in getattr(args, f"_{name}_defaults").items():
            if getattr(sub, k, None) is None:
                setattr(sub, k, v)
        try:
            status |= fn(sub)
        except SystemExit as exc:  # keep going: report which step failed
            print(f"gpu-{name} failed: {exc}", file=sys.stderr)
            status = 1
    return status


# ------------------------------------------------------------------------------------------
# registration

_DEFAULTS = {
    "preempt": {"iters": 3000, "lead_us": None, "kernels": list(KERNELS), "matmul": 1024, "slicing": "both",
                "slice_us": 20.0, "spin_us": 200.0, "spin_lp_us": 2000.0, "raw": None},
    "kappa": {"iters": 500, "slices_us": [5.0, 10.0, 20.0, 50.0, 100.0], "lp_ms": 2.0, "lead_us": 0.0},
    "backend": {"iters": 5000},
    "kernels": {"backend": "cuda", "iters": 300, "warmup": 20, "buckets": 6, "wait": "spin", "scale": 1.0,
                "server_args": ""},
    "overhead": {"backend": "cuda", "iters": 2000, "warmup": 50, "buckets": 6, "waits": ["spin", "suspend"],
                 "server_args": ""},
    "contention": {"backend": "cuda", "iters": 400, "warmup": 10, "buckets": 6, "clients": [0, 1, 2, 4], "lp_ms": 5.0,
                   "hp_kernel": "matmul", "gap_ms": 2.0, "scale": 1.0, "lp_priority": 10, "server_args": ""},
    "lanes": {"backend": "cuda", "iters": 300, "warmup": 10, "clients": 2, "ms": 2.0, "widths": [25, 50, 100],
              "lanes": [1, 2], "priority": 10, "server_args": ""},
}


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="results/gpu", help="results folder (default: results/gpu)")
    p.add_argument("--binary", default=None, help="path of paam_gpu_bench")


def _backend_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="cuda", choices=["cuda", "cpu"],
                   help="server and direct-mode backend (cpu: the same bench without a GPU)")


def _add(sub: Any, name: str, fn: Callable[[argparse.Namespace], int], help_text: str,
         extra: Callable[[argparse.ArgumentParser, dict[str, Any]], None]) -> None:
    p = sub.add_parser(f"gpu-{name}", help=help_text, description=help_text)
    _common(p)
    extra(p, _DEFAULTS[name])
    p.set_defaults(func=fn)


def register(bench_subparsers: Any) -> None:
    """Adds the gpu-* sub-commands to ``paam bench``'s sub-parsers."""
    s = bench_subparsers

    def preempt(p, d):
        p.add_argument("--iters", type=int, default=d["iters"], help="iterations per kernel and slicing mode")
        p.add_argument("--lead-us", type=float, default=d["lead_us"],
                       help="host wait between the low- and high-priority launches (paper: 0; default: a "
                            "random time within the low-priority kernel's run)")
        p.add_argument("--kernels", nargs="+", default=d["kernels"], choices=KERNELS)
        p.add_argument("--matmul", type=int, default=d["matmul"], help="matmul size m=k=n")
        p.add_argument("--slicing", choices=["off", "on", "both"], default=d["slicing"],
                       help="the low-priority kernel unsliced, preemptible in slices, or both (default: both)")
        p.add_argument("--slice-us", type=float, default=d["slice_us"], help="slice length (paamd --gpu-slice-us)")
        p.add_argument("--spin-us", type=float, default=d["spin_us"], help="the high-priority spin's length")
        p.add_argument("--spin-lp-us", type=float, default=d["spin_lp_us"], help="the low-priority spin's length")
        p.add_argument("--raw", default=d["raw"], metavar="FILE",
                       help="render FILE, a 'paam_gpu_bench preempt --json' output, instead of running")

    def kappa(p, d):
        p.add_argument("--iters", type=int, default=d["iters"])
        p.add_argument("--slices-us", type=float, nargs="+", default=d["slices_us"])
        p.add_argument("--lp-ms", type=float, default=d["lp_ms"])
        p.add_argument("--lead-us", type=float, default=d["lead_us"])

    def backend(p, d):
        p.add_argument("--iters", type=int, default=d["iters"])

    def kernels(p, d):
        _backend_arg(p)
        p.add_argument("--iters", type=int, default=d["iters"])
        p.add_argument("--warmup", type=int, default=d["warmup"])
        p.add_argument("--buckets", type=int, default=d["buckets"])
        p.add_argument("--wait", default=d["wait"], choices=["spin", "suspend", "hybrid"])
        p.add_argument("--scale", type=float, default=d["scale"], help="multiplies the problem sizes")
        p.add_argument("--server-args", default=d["server_args"], help="extra paamd arguments, e.g. '--poll-us 1000'")

    def overhead(p, d):
        _backend_arg(p)
        p.add_argument("--iters", type=int, default=d["iters"])
        p.add_argument("--warmup", type=int, default=d["warmup"])
        p.add_argument("--buckets", type=int, default=d["buckets"])
        p.add_argument("--waits", nargs="+", default=d["waits"], choices=["spin", "suspend", "hybrid"])
        p.add_argument("--server-args", default=d["server_args"], help="extra paamd arguments")

    def contention(p, d):
        _backend_arg(p)
        p.add_argument("--iters", type=int, default=d["iters"], help="high-priority requests per point")
        p.add_argument("--warmup", type=int, default=d["warmup"])
        p.add_argument("--buckets", type=int, default=d["buckets"])
        p.add_argument("--clients", type=int, nargs="+", default=d["clients"], help="values of N")
        p.add_argument("--lp-ms", type=float, default=d["lp_ms"], help="low-priority spin length")
        p.add_argument("--hp-kernel", default=d["hp_kernel"])
        p.add_argument("--lp-priority", type=int, default=d["lp_priority"],
                       help="chain priority of every low-priority client (the high one has 1000)")
        p.add_argument("--server-args", default=d["server_args"], help="extra paamd arguments")
        p.add_argument("--gap-ms", type=float, default=d["gap_ms"],
                       help="random pause (0..gap) before each high-priority request")
        p.add_argument("--scale", type=float, default=d["scale"])

    def lanes(p, d):
        _backend_arg(p)
        p.add_argument("--iters", type=int, default=d["iters"], help="releases per point")
        p.add_argument("--warmup", type=int, default=d["warmup"])
        p.add_argument("--clients", type=int, default=d["clients"], help="clients of the one priority")
        p.add_argument("--ms", type=float, default=d["ms"], help="spin length")
        p.add_argument("--widths", type=int, nargs="+", default=d["widths"],
                       help="share of the GPU's block slots each spin takes, percent")
        p.add_argument("--lanes", type=int, nargs="+", default=d["lanes"], help="paamd --lanes for the bucket")
        p.add_argument("--priority", type=int, default=d["priority"])
        p.add_argument("--server-args", default=d["server_args"], help="extra paamd arguments")

    _add(s, "preempt", cmd_preempt,
         "GPU preemption delay between stream priorities per kernel kind, unsliced and sliced (paper Table I)",
         preempt)
    _add(s, "kappa", cmd_kappa, "preemption cost κ while spin holds the GPU, per spin block length", kappa)
    _add(s, "backend", cmd_backend, "CUDA backend round trip without the server, per wait mode", backend)
    _add(s, "kernels", cmd_kernels, "kernel time alone: paamd vs direct invocation (paper Fig. 13)", kernels)
    _add(s, "overhead", cmd_overhead, "request overhead through paamd with the CUDA backend", overhead)
    _add(s, "contention", cmd_contention,
         "high-priority latency under N low-priority clients: paamd vs direct processes", contention)
    _add(s, "lanes", cmd_lanes,
         "clients of one bucket at once on one lane or several, for spins narrower or wider than the GPU", lanes)

    p = s.add_parser("gpu-all", help="every gpu-* bench with its defaults, into one folder")
    _common(p)
    p.add_argument("--skip", nargs="*", default=[], choices=list(_DEFAULTS))
    p.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run)")
    p.set_defaults(func=_all_entry)


def _all_entry(args: argparse.Namespace) -> int:
    for name, d in _DEFAULTS.items():
        d = dict(d)
        if args.quick and "iters" in d:
            d["iters"] = max(20, d["iters"] // 20)
        setattr(args, f"_{name}_defaults", d)
    return cmd_all(args)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m paam.bench.gpu gpu-…``: the same sub-commands without the paam CLI."""
    parser = argparse.ArgumentParser(prog="python -m paam.bench.gpu")
    register(parser.add_subparsers(dest="bench", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
