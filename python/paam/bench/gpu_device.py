"""``paam bench gpu-kappa`` and ``gpu-backend`` (and the runner of ``gpu-preempt``,
:mod:`paam.bench.gpu_preempt`): figures of the C++ binary ``paam_gpu_bench`` (found with
``--binary``, ``$PAAM_GPU_BENCH``, next to ``paamd``, on PATH, or in a ``build*`` folder of the
source tree)."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np

from paam import figures
from paam.bench.gpu_report import md_table, payload_header, write_outputs

KERNELS = ("matmul", "reduction", "vector_add", "histogram", "spin")  # gpu-preempt's kinds


def find_gpu_bench(explicit: str | None = None) -> str:
    """Path of the paam_gpu_bench binary (see the module docstring for the search order)."""
    if explicit:
        return explicit
    env = os.environ.get("PAAM_GPU_BENCH")
    if env:
        return env
    for d in (Path(sysconfig.get_path("scripts")), Path(sys.prefix) / "bin"):
        if (d / "paam_gpu_bench").is_file():
            return str(d / "paam_gpu_bench")
    found = shutil.which("paam_gpu_bench")
    if found:
        return found
    root = Path(__file__).resolve().parents[3]
    builds = sorted(root.glob("build*/**/paam_gpu_bench"), key=lambda p: p.stat().st_mtime, reverse=True)
    for p in builds:
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    raise SystemExit("cannot find paam_gpu_bench: build with CUDA (cmake -DPAAM_WITH_CUDA=ON), install the "
                     "package, or pass --binary / set PAAM_GPU_BENCH")


def run_binary(args: argparse.Namespace, sub: list[str], json_path: Path) -> dict[str, Any]:
    binary = find_gpu_bench(args.binary)
    cmd = [binary] + sub + ["--json", str(json_path)]
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{binary} exited with status {proc.returncode}")
    data = json.loads(json_path.read_text())
    data["command_binary"] = " ".join(cmd)
    return data


def cmd_kappa(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = run_binary(args, ["kappa", "--iters", str(args.iters), "--slices-us",
                            ",".join(str(s) for s in args.slices_us), "--lp-ms", str(args.lp_ms),
                            "--lead-us", str(args.lead_us)], out / "kappa.raw.json")
    payload = payload_header(args, "gpu-kappa") | {"result": raw}
    rows = [[s["slice_us"], s["alone_us"]["mean"], s["delay_us"]["mean"], s["delay_us"]["p99"],
             s["delay_us"]["max"], s["spin_ms"]["mean"]] for s in raw["slices"]]
    table = (f"κ: delay (µs) of a one-block kernel at the top stream priority while spin "
             f"({raw['lp_ms']} ms) holds the GPU, {raw['iters']} iterations, {raw['device']['name']}\n\n" +
             md_table(["spin block (µs)", "alone", "delay mean", "delay p99", "delay max", "spin ms"], rows) +
             "\n\nspin alone, requested vs measured (GPU clock):\n\n" +
             md_table(["requested ms", "measured ms (mean)", "max"],
                      [[s["requested_ms"], s["measured_ms"]["mean"], s["measured_ms"]["max"]]
                        for s in raw["spin_alone"]]))

    def plot(path: Path) -> None:
        plt = figures.pyplot()
        x = [s["slice_us"] for s in raw["slices"]]
        fig, ax = plt.subplots(figsize=(6, 4))
        for key, style in (("mean", "o-"), ("p99", "s--"), ("max", "v:")):
            ax.plot(x, [s["delay_us"][key] for s in raw["slices"]], style, label=key)
        ax.plot(x, x, "k-", alpha=0.3, label="delay = block length")
        ax.set_xlabel("spin block length (µs)")
        ax.set_ylabel("delay of the high-priority kernel (µs)")
        ax.set_xscale("log")
        ax.legend()
        figures.save(fig, path, dpi=120)

    write_outputs(out, "kappa", payload, table, plot)
    return 0


def cmd_backend(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = run_binary(args, ["backend", "--iters", str(args.iters)], out / "backend.raw.json")
    payload = payload_header(args, "gpu-backend") | {"result": raw}
    rows = [[m["wait"], m["load"], m["round_trip_us"]["p50"], m["round_trip_us"]["mean"],
             m["round_trip_us"]["p99"], m["round_trip_us"]["max"], m["kernel_us"]["p50"]] for m in raw["modes"]]
    table = (f"CUDA backend Run() round trip (µs), {raw['kernel']}, level 0, {raw['iters']} runs, "
             f"{raw['device']['name']}\n\n" +
             md_table(["wait", "load", "p50", "mean", "p99", "max", "kernel p50"], rows))

    def plot(path: Path) -> None:
        plt = figures.pyplot()
        labels = [f"{m['wait']}\n{m['load']}" for m in raw["modes"]]
        fig, ax = plt.subplots(figsize=(9, 4))
        x = np.arange(len(labels))
        ax.bar(x - 0.2, [m["round_trip_us"]["p50"] for m in raw["modes"]], 0.4, label="p50")
        ax.bar(x + 0.2, [m["round_trip_us"]["p99"] for m in raw["modes"]], 0.4, label="p99")
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_ylabel("round trip (µs)")
        ax.legend()
        figures.save(fig, path, dpi=120)

    write_outputs(out, "backend", payload, table, plot)
    return 0
