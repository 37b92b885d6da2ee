"""Typed faces of the kernels: how Python values become a request and a result comes back.

A request carries one input byte area (the kernel's inputs packed back to back) and up to four
integer parameters; see ``core/include/paam/kernel_abi.h``. Each :class:`KernelSpec` packs
numpy inputs into a region's input view and turns the output bytes back into numpy values.
Kernels without a spec (user plugins) take one bytes-like input and ``params=(...)`` and return
the raw output bytes as a ``uint8`` array.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .errors import InputTooLarge, InvalidArgument

MiB = 1 << 20


def _put(view: np.ndarray, offset: int, array: np.ndarray) -> int:
    data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
    end = offset + data.size
    if end > view.size:
        raise InputTooLarge(
            f"input of {end} bytes exceeds the {view.size} declared for this kernel at registration")
    view[offset:end] = data
    return end


def _f32(x: Any, what: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype != np.float32:
        if not np.issubdtype(a.dtype, np.number):
            raise InvalidArgument(f"{what} must be numeric, got {a.dtype}")
        a = a.astype(np.float32)
    return a


@dataclass(frozen=True)
class KernelSpec:
    name: str
    max_input: int    # default declared capacities
    max_output: int
    pack: Callable[..., tuple[int, list[int], Any]]   # (view, *inputs, **params) -> (nbytes, params, ctx)
    unpack: Callable[[np.ndarray, Any], Any]         # (output bytes, ctx) -> result


def _pack_vector_add(view, a, b):
    a, b = _f32(a, "a"), _f32(b, "b")
    if a.shape != b.shape:
        raise InvalidArgument(f"vector_add needs equal shapes, got {a.shape} and {b.shape}")
    end = _put(view, _put(view, 0, a), b)
    return end, [a.size], a.shape


def _pack_matmul(view, A, B):
    A, B = _f32(A, "A"), _f32(B, "B")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise InvalidArgument(f"matmul needs A[m,k] and B[k,n], got {A.shape} and {B.shape}")
    end = _put(view, _put(view, 0, A), B)
    return end, [A.shape[0], A.shape[1], B.shape[1]], (A.shape[0], B.shape[1])


def _pack_reduction(view, x):
    x = _f32(x, "x")
    return _put(view, 0, x), [x.size], None


def _pack_histogram(view, x):
    x = np.asarray(x)
    if x.dtype != np.uint8:
        raise InvalidArgument(f"histogram takes uint8 data, got {x.dtype}")
    return _put(view, 0, x), [x.size], None


def _pack_spin(view, duration_ms: float | None = None, duration_ns: int | None = None, *,
               width_pct: int | None = None):
    """``width_pct``: on a GPU, the share of its block slots the spin takes (1-100, default all),
    leaving the rest to kernels of other streams; a CPU device ignores it."""
    if (duration_ms is None) == (duration_ns is None):
        raise InvalidArgument("spin needs exactly one of duration_ms= or duration_ns=")
    ns = int(duration_ns if duration_ns is not None else round(duration_ms * 1e6))
    if ns < 0:
        raise InvalidArgument("spin duration must be non-negative")
    if width_pct is None:
        return 0, [ns], None
    if not 1 <= int(width_pct) <= 100:
        raise InvalidArgument(f"spin width_pct must be 1..100, got {width_pct}")
    return 0, [ns, 0, int(width_pct)], None


BUILTINS: dict[str, KernelSpec] = {
    "vector_add": KernelSpec("vector_add", 8 * MiB, 4 * MiB, _pack_vector_add,
                             lambda out, shape: out.view(np.float32).copy().reshape(shape)),
    "matmul": KernelSpec("matmul", 8 * MiB, 4 * MiB, _pack_matmul,
                         lambda out, shape: out.view(np.float32).copy().reshape(shape)),
    "reduction": KernelSpec("reduction", 4 * MiB, 8, _pack_reduction,
                            lambda out, _: float(out.view(np.float32)[0])),
    "histogram": KernelSpec("histogram", 4 * MiB, 1024, _pack_histogram,
                            lambda out, _: out.view(np.uint32).copy()),
    # The result is the time the kernel occupied the device, in milliseconds.
    "spin": KernelSpec("spin", 0, 8, _pack_spin, lambda out, _: float(out.view(np.uint64)[0]) / 1e6),
}


def _pack_raw(view, data=b"", *, params=()):
    arr = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8) if not isinstance(data, np.ndarray) else data
    return _put(view, 0, arr), [int(p) for p in params], None


RAW = KernelSpec("raw", 1 * MiB, 1 * MiB, _pack_raw, lambda out, _: out.copy())


def spec_for(name: str) -> KernelSpec:
    """The typed spec of a kernel, or the raw spec for kernels paam does not know (plugins)."""
    return BUILTINS.get(name, RAW)
