"""Python's cyclic garbage collector in an executor process: its pauses recorded, its mode
chosen (``--gc``), and which measured instances a collection fell into."""
from __future__ import annotations

import gc
import time
from typing import Any, Iterable

import numpy as np

from paam_experiments.common.report import fmt
from paam_experiments.common.stats import summarize

#: ``--gc``'s choices (:func:`paam_experiments.common.args.add_gc_argument`)
GC_MODES = ("default", "freeze", "off")


class GcPauses:
    """Every run of Python's cyclic collector in this process while the block runs: (generation,
    start, duration) in CLOCK_MONOTONIC ns (:meth:`array`). A full collection holds the GIL for
    as long as it takes to scan every tracked object: a pause of the executor that the analysis
    does not know. ``mode`` (one of :data:`GC_MODES`) is applied on entry and undone on exit:
    ``freeze`` collects once and freezes what exists (never scanned again), ``off`` disables
    the collector."""

    def __init__(self, mode: str = "default") -> None:
        if mode not in GC_MODES:
            raise ValueError(f"gc mode {mode!r}: one of {', '.join(GC_MODES)}")
        self.mode, self._rows, self._t0 = mode, [], 0

    def _cb(self, phase: str, info: dict) -> None:
        now = time.monotonic_ns()
        if phase == "start":
            self._t0 = now
        else:
            self._rows.append((info.get("generation", -1), self._t0, now - self._t0))

    def __enter__(self) -> "GcPauses":
        if self.mode == "freeze":
            gc.collect()
            gc.freeze()
        elif self.mode == "off":
            gc.disable()
        gc.callbacks.append(self._cb)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self._cb)
        if self.mode == "off":
            gc.enable()
        elif self.mode == "freeze":
            gc.unfreeze()

    def array(self) -> np.ndarray:
        """The pauses as an int64 array [n, 3]: generation, start ns, duration ns."""
        return np.asarray(self._rows, dtype=np.int64).reshape(-1, 3)


def gc_summary(pauses: np.ndarray) -> dict[str, Any]:
    """Collections per generation and the longest pause (ms) of one process's
    :meth:`GcPauses.array`."""
    out: dict[str, Any] = {}
    for gen in (0, 1, 2):
        d = pauses[pauses[:, 0] == gen, 2] / 1e6 if len(pauses) else np.zeros(0)
        out[f"gen{gen}"] = {"n": int(d.size), "max_ms": float(d.max()) if d.size else 0.0,
                            "total_ms": float(d.sum())}
    return out


def gc_line(by_process: Iterable[dict[str, Any]]) -> str:
    """summary.txt's text for :func:`gc_summary` of a run's processes: collections per
    generation summed, and the longest pause of any."""
    by = list(by_process)
    n = [sum(e[f"gen{k}"]["n"] for e in by) for k in (0, 1, 2)]
    longest = max((e[f"gen{k}"]["max_ms"] for e in by for k in (0, 1, 2)), default=0.0)
    return f"{n[0]}/{n[1]}/{n[2]}, longest {fmt(longest, 2)}"


def overlaps(starts_ns, ends_ns, pauses: np.ndarray) -> np.ndarray:
    """Per interval [start, end]: ns of ``pauses`` (:meth:`GcPauses.array`) inside it."""
    s, e = np.asarray(starts_ns, np.int64), np.asarray(ends_ns, np.int64)
    out = np.zeros(len(s), dtype=np.int64)
    for _gen, p0, dur in pauses:
        lo, hi = np.maximum(s, p0), np.minimum(e, p0 + dur)
        out += np.clip(hi - lo, 0, None)
    return out


def gc_instances(ends_ns, spans_ms, pauses: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
    """How many instances (their end in ns and length in ms) had one of ``pauses`` (a process's
    :meth:`GcPauses.array`) inside them, and the ms of collection each of those held; with the
    mask of them."""
    ends = np.asarray(ends_ns, dtype=np.int64)
    starts = ends - (np.asarray(spans_ms, dtype=np.float64) * 1e6).astype(np.int64)
    inside = overlaps(starts, ends, pauses) / 1e6
    hit = inside > 0
    return {"instances": int(len(inside)), "during_a_collection": int(hit.sum()),
            "collection_ms_inside": summarize(inside[hit]) if hit.any() else None}, hit
