"""``paam bench``: benchmarks that print figures and write JSON, a table and plots."""
from __future__ import annotations

import argparse

from . import models, overhead


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmarks (request overhead, GPU measurements, models)")
    bench_sub = p.add_subparsers(dest="bench", metavar="BENCH")
    bench_sub.required = True
    overhead.register(bench_sub)
    models.register(bench_sub)
    try:  # GPU measurements; present when the CUDA bench module is installed
        from . import gpu
    except ImportError:
        gpu = None
    if gpu is not None:
        gpu.register(bench_sub)
    from . import gpu_ipc  # imports CuPy only when run
    gpu_ipc.register(bench_sub)
