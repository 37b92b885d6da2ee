"""What every ``paam bench gpu-*`` writes: the figures' statistics, the machine, the command,
and the JSON, Markdown and PNG files of one bench."""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def gpu_name() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().replace("\n", "; ") or "unknown GPU"
    except (OSError, subprocess.SubprocessError):
        return "unknown GPU (no nvidia-smi)"


def machine_info() -> dict[str, Any]:
    return {"gpu": gpu_name(), "host": platform.node(), "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform()}


def stats(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return {"n": 0}
    return {"n": int(a.size), "mean": float(a.mean()), "std": float(a.std(ddof=1)) if a.size > 1 else 0.0,
            "min": float(a.min()), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
            "max": float(a.max())}


def write_outputs(out: Path, name: str, payload: dict[str, Any], table: str, plot: Callable[[Path], None] | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(payload, indent=1))
    (out / f"{name}.md").write_text(table + "\n")
    if plot is not None:
        plot(out / f"{name}.png")
    print(table)
    print(f"wrote {out / name}.{{json,md{',png' if plot else ''}}}")


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def fmt(v: Any) -> str:
        return f"{v:.2f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def command_line(bench: str) -> str:
    argv = sys.argv[1:]
    for i, a in enumerate(argv):
        if a.startswith("gpu-"):
            return "paam bench " + " ".join([bench] + argv[i + 1:] if a == "gpu-all" else argv[i:])
    return "paam bench " + bench


def payload_header(args: argparse.Namespace, bench: str) -> dict[str, Any]:
    return {"bench": bench, "date": now_iso(), "command": command_line(bench), "machine": machine_info()}
