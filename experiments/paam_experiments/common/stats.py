"""Summary statistics of latency samples: percentiles, COSMIC's jitter figures, correlation."""
from __future__ import annotations

from typing import Iterable

import numpy as np


def summarize(values: Iterable[float] | np.ndarray) -> dict[str, float]:
    """min / mean / p50 / p99 / p99.9 / max, COSMIC's jitter figures, and the sample count.

    ``avg_jitter`` is the mean absolute deviation from the mean (COSMIC's "average jitter": a
    bimodal distribution raises it); ``p2v`` is the peak-to-valley jitter, max − min. Every
    figure is NaN (and ``n`` 0) for no samples.
    """
    a = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.float64)
    if a.size == 0:
        nan = float("nan")
        return {"n": 0, "min": nan, "mean": nan, "p50": nan, "p99": nan, "p999": nan,
                "max": nan, "std": nan, "avg_jitter": nan, "p2v": nan}
    mean = float(a.mean())
    lo, hi = float(a.min()), float(a.max())
    p50, p99, p999 = (float(x) for x in np.percentile(a, [50, 99, 99.9]))
    return {"n": int(a.size), "min": lo, "mean": mean, "p50": p50, "p99": p99, "p999": p999,
            "max": hi, "std": float(a.std()), "avg_jitter": float(np.abs(a - mean).mean()),
            "p2v": hi - lo}


def correlation(x, y) -> float:
    """Pearson's r of two equally long series; NaN with fewer than three values or where
    either is constant."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) <= 2 or x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])
