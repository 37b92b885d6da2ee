"""Result folders and files, and plain-text tables: what every experiment writes its results
with."""
from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable

import numpy as np


def out_dir(path: str | os.PathLike) -> Path:
    """``path`` as a folder, created with its parents where missing."""
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    return p


def write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON; NaN and infinity become null, numpy scalars plain numbers."""
    path.write_text(json.dumps(_clean(data), indent=1))


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        return _clean(value.item())
    return value


def open_csv(path: Path):
    """``path`` opened for reading as text, or ``path`` + ".xz" when only that exists (raw
    results kept xz-compressed)."""
    if not path.exists() and path.with_name(path.name + ".xz").exists():
        import lzma
        return lzma.open(path.with_name(path.name + ".xz"), "rt", newline="")
    return path.open(newline="")


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Rows of dicts (same keys) as CSV; floats with 3 decimals."""
    if not rows:
        path.write_text("")
        return
    keys = list(rows[0])
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys)
        for r in rows:
            w.writerow([f"{r[k]:.3f}" if isinstance(r[k], float) else r[k] for k in keys])


def table(rows: list[list[str]], right: Iterable[int] = ()) -> str:
    """A plain-text table, first row the header; the columns in ``right`` right-aligned."""
    right = set(right)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, row in enumerate(rows):
        out.append("  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                             for i, c in enumerate(row)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def fmt(x: float | None, digits: int = 1) -> str:
    """A number with ``digits`` decimals; "n/a" for None, NaN and infinity."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def fmt_p50_p99_max(s: dict, digits: int = 1) -> str:
    """A :func:`paam_experiments.common.stats.summarize` result as "p50 / p99 / max"."""
    return " / ".join(fmt(s[k], digits) for k in ("p50", "p99", "max"))
