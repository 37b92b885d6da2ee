"""Tensor tables: how named numpy arrays travel to a model in paamd and back.

A model request's input area starts with a small table (docs/models.md, "The tensor table"):
a 64-byte header (magic ``PTT1``, version 1, count, header and entry sizes, bytes used), then
128 bytes per tensor (name, dtype code, ndim, shape[8], offset, length), then each tensor's
bytes at a multiple of 64 after the table. The model writes its outputs into the output area
the same way. The layout is the one of ``core/src/tensors/tensor_table.h``; paamd's model plugin
checks every table it reads (it trusts nothing a client writes), and :func:`unpack` checks the
one it gets back.
"""
from __future__ import annotations

import math
import struct
from typing import Mapping

import numpy as np

from .errors import InputTooLarge, InvalidArgument, ProtocolError

MAGIC = 0x31545450  # "PTT1"
VERSION = 1
MAX_TENSORS = 64
MAX_DIMS = 8
NAME_BYTES = 40
ALIGN = 64
HEADER = struct.Struct("<IHHIIQ40x")     # 64 bytes
ENTRY = struct.Struct("<40sII8qQQ")      # 128 bytes
assert HEADER.size == 64 and ENTRY.size == 128

# paam::DType codes (core/include/paam/tensor.h) and the numpy dtypes they are.
DTYPES = {1: "float32", 2: "float64", 3: "float16", 4: "bfloat16", 5: "int8", 6: "uint8",
          7: "int16", 8: "int32", 9: "int64", 10: "bool"}
CODES = {name: code for code, name in DTYPES.items()}
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")


def table_bytes(count: int) -> int:
    return HEADER.size + count * ENTRY.size


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        try:
            import ml_dtypes  # numpy has no bfloat16 of its own
        except ImportError:
            raise InvalidArgument("bfloat16 tensors need the ml_dtypes package") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def describe(dtype: str, shape) -> str:
    """``float32[1,3,224,224]``."""
    return f"{dtype}[{','.join(str(int(d)) for d in shape)}]"


def layout(shapes: list[tuple[str, str, tuple[int, ...]]]) -> tuple[list[int], int]:
    """Offsets of tensors (name, dtype name, shape) behind their table, and the bytes used."""
    at = table_bytes(len(shapes))
    offsets = []
    for _name, dtype, shape in shapes:
        at = _align(at)
        offsets.append(at)
        at += math.prod(int(d) for d in shape) * _numpy_dtype(dtype).itemsize
    return offsets, at


def pack(view: np.ndarray, model: str, tensors: Mapping[str, object]) -> int:
    """Writes ``tensors`` (name -> array-like) behind a table into ``view`` (the region's input
    area, uint8) and returns the bytes used. Arrays keep their dtype: paamd's model checks it
    against its signature and names what it expected."""
    if len(tensors) > MAX_TENSORS:
        raise InvalidArgument(f"model '{model}': {len(tensors)} input tensors (a request carries at "
                              f"most {MAX_TENSORS})")
    arrays = []
    for name, value in tensors.items():
        if not (0 < len(name) < NAME_BYTES and set(name) <= _NAME_CHARS):
            raise InvalidArgument(f"model '{model}': tensor name {name!r} is invalid (1..{NAME_BYTES - 1} "
                                  "characters of [A-Za-z0-9_.])")
        a = np.asarray(value)
        dtype = a.dtype.name
        if dtype not in CODES:
            raise InvalidArgument(f"model '{model}': input '{name}' is {dtype}, which a tensor table "
                                  f"cannot carry ({', '.join(CODES)})")
        if a.ndim > MAX_DIMS:
            raise InvalidArgument(f"model '{model}': input '{name}' has {a.ndim} dimensions (at most "
                                  f"{MAX_DIMS})")
        arrays.append((name, dtype, np.ascontiguousarray(a)))
    offsets, used = layout([(n, d, a.shape) for n, d, a in arrays])
    if used > view.size:
        raise InputTooLarge(f"model '{model}': the inputs need {used} bytes with their tensor table; "
                            f"the region declared at registration holds {view.size}")
    HEADER.pack_into(view, 0, MAGIC, VERSION, len(arrays), HEADER.size, ENTRY.size, used)
    for i, ((name, dtype, a), off) in enumerate(zip(arrays, offsets)):
        shape = list(a.shape) + [0] * (MAX_DIMS - a.ndim)
        ENTRY.pack_into(view, HEADER.size + i * ENTRY.size, name.encode(), CODES[dtype], a.ndim,
                        *shape, off, a.nbytes)
        if a.nbytes:
            view[off:off + a.nbytes] = a.reshape(-1).view(np.uint8)
    return used


def unpack(area: np.ndarray, model: str) -> dict[str, np.ndarray]:
    """The tensors of the table at the start of ``area`` (the output bytes paamd reported), as
    copies: the region's output area is reused by the next request."""
    def bad(why: str) -> ProtocolError:
        return ProtocolError(f"model '{model}': its output table: {why}")
    if area.size < HEADER.size:
        raise bad(f"{area.size} bytes hold no table")
    magic, version, count, hbytes, ebytes, used = HEADER.unpack_from(area, 0)
    if magic != MAGIC or version != VERSION or hbytes != HEADER.size or ebytes != ENTRY.size:
        raise bad("not a version 1 tensor table")
    if count > MAX_TENSORS or table_bytes(count) > used or used > area.size:
        raise bad(f"{count} tensors, {used} bytes used, in {area.size}")
    out: dict[str, np.ndarray] = {}
    for i in range(count):
        raw, code, ndim, *rest = ENTRY.unpack_from(area, HEADER.size + i * ENTRY.size)
        shape, off, nbytes = rest[:MAX_DIMS], rest[MAX_DIMS], rest[MAX_DIMS + 1]
        name = raw.split(b"\0", 1)[0].decode("ascii", "replace")
        if code not in DTYPES or ndim > MAX_DIMS or any(d < 0 for d in shape[:ndim]):
            raise bad(f"tensor '{name}' has an unknown dtype or a bad shape")
        dtype = _numpy_dtype(DTYPES[code])
        dims = tuple(shape[:ndim])
        if int(np.prod(dims, dtype=object)) * dtype.itemsize != nbytes or off % ALIGN \
                or off < table_bytes(count) or off + nbytes > used:
            raise bad(f"tensor '{name}' lies outside the area or does not match its shape")
        out[name] = area[off:off + nbytes].view(dtype).reshape(dims).copy()
    return out
