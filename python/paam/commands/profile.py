"""``paam profile``: a model's execution time on this device, and a WCET estimate for the analysis.

Runs the model through paamd ``--runs`` times (after ``--warmup`` runs that are not counted) at
the top chain priority, one request at a time, and reports the distribution of its execution
(device end - device start, paamd's timestamps) and of its response (woken - submitted, the
client's view). The WCET estimate is measurement-based: the largest execution observed times a
margin (``--margin``, default 1.2), which the report states with the numbers it came from; it is
an estimate for the analysis, not a proven bound. With ``-o FILE`` the estimate goes into a
system description (docs/analysis.md): every segment that names the model (``model: NAME``) gets
it as its wcet, and ``models: {NAME: ...}`` keeps the measurement; a new file is a minimal
system with one chain running the model that ``paam analyze`` accepts.
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
from pathlib import Path
from typing import Any

TOP_PRIORITY = 2**32 - 1  # paam chain priorities are unsigned 32-bit; larger is more critical


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile", help="measure a model's execution time through paamd and estimate its WCET",
        description=__doc__.split("\n\n", 1)[1].replace("``", "'"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="the model's name (paam models lists them)")
    p.add_argument("--socket", default=None, help="paamd's socket (default: $PAAM_SOCKET or the default path)")
    p.add_argument("--runs", type=int, default=200, help="measured runs (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="runs before measuring, not counted (default 20)")
    p.add_argument("--margin", type=float, default=1.2,
                   help="WCET estimate = largest execution observed x this (default 1.2)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D,D,...",
                   help="the shape of input NAME (default: its max_shape, else 1 for a varying "
                        "dimension); repeatable")
    p.add_argument("--wait", default="spin", choices=("spin", "suspend", "hybrid"),
                   help="how the client waits (default spin: the least response overhead)")
    p.add_argument("-o", "--output", default=None, metavar="SYSTEM.yaml",
                   help="write the estimate into this system description (created if missing)")
    p.add_argument("--accelerator", default="gpu0",
                   help="the accelerator name of a new system description (default gpu0)")
    p.add_argument("--period-ms", type=float, default=None,
                   help="the period of the chain of a new system description (default: 10 x the "
                        "WCET estimate, at least 1 ms)")
    p.set_defaults(func=_run)


def _fail(message: str) -> int:
    print(f"paam profile: {message}", file=sys.stderr)
    return 2


def _shapes(info, overrides: list[str]) -> dict[str, tuple[int, ...]]:
    given: dict[str, tuple[int, ...]] = {}
    names = {t.name for t in info.inputs}
    for text in overrides:
        name, _, dims = text.partition("=")
        if name not in names:
            raise ValueError(f"--shape {text}: model '{info.name}' has no input '{name}' "
                             f"(its inputs: {', '.join(sorted(names))})")
        try:
            given[name] = tuple(int(d) for d in dims.split(",")) if dims else ()
        except ValueError:
            raise ValueError(f"--shape {text}: give NAME=D,D,... with integer dimensions") from None
    shapes = {}
    for t in info.inputs:
        if t.name in given:
            shapes[t.name] = given[t.name]
        else:
            shapes[t.name] = tuple(d if d >= 0 else (t.max_shape[i] if t.max_shape else 1)
                                   for i, d in enumerate(t.shape))
    return shapes


def _inputs(info, shapes: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    import numpy as np
    from ..tensors import _numpy_dtype
    rng = np.random.default_rng(0)
    out = {}
    for t in info.inputs:
        dtype = _numpy_dtype(t.dtype)
        if dtype.kind == "f" or t.dtype == "bfloat16":
            out[t.name] = rng.random(shapes[t.name], dtype=np.float32).astype(dtype)
        elif dtype.kind == "b":
            out[t.name] = rng.random(shapes[t.name]) < 0.5
        else:
            out[t.name] = rng.integers(0, 8, shapes[t.name]).astype(dtype)
    return out


def _quantile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[i]


def _summary(values_ms: list[float]) -> dict[str, float]:
    v = sorted(values_ms)
    return {"p50": round(_quantile(v, 0.50), 4), "p99": round(_quantile(v, 0.99), 4),
            "max": round(v[-1], 4), "mean": round(sum(v) / len(v), 4)}


def _run(args: argparse.Namespace) -> int:
    import paam
    from tqdm import tqdm

    from ..errors import PaamError
    from ..models import query_models
    if args.runs < 1:
        return _fail(f"--runs must be at least 1, not {args.runs}")
    if args.warmup < 0:
        return _fail(f"--warmup must be 0 or more, not {args.warmup}")
    if not args.margin >= 1.0:
        return _fail(f"--margin must be at least 1, not {args.margin:g}")
    if args.period_ms is not None and not args.period_ms > 0:
        return _fail(f"--period-ms must be positive, not {args.period_ms:g}")
    socket = args.socket or paam.default_socket_path()
    try:
        infos = {m.name: m for m in query_models(socket)}
    except PaamError as err:
        return _fail(f"{socket}: {err}")
    info = infos.get(args.model)
    if info is None:
        served = ", ".join(infos) or "none (start it with --model NAME=PATH)"
        return _fail(f"paamd at {socket} serves no model '{args.model}' (its models: {served})")
    try:
        shapes = _shapes(info, args.shape)
    except ValueError as err:
        return _fail(str(err))
    others = _other_clients(socket)
    if others:
        print(f"note: {others} other client(s) are registered with paamd; the measurement assumes "
              "an otherwise idle server", file=sys.stderr)
    inputs = _inputs(info, shapes)
    sizes = {args.model: (max(info.max_input_bytes, 0), max(info.max_output_bytes, 0))}
    if not info.max_input_bytes or not info.max_output_bytes:
        from ..tensors import layout
        used = layout([(n, str(a.dtype), a.shape) for n, a in inputs.items()])[1]
        sizes = {args.model: (used, 256 << 20)}
    print(f"profiling '{args.model}' ({info.format} on {info.device}) with "
          + ", ".join(f"{n} {_dtype_of(info, n)}[{','.join(map(str, s))}]" for n, s in shapes.items())
          + f": {args.warmup} warm-up run(s), then {args.runs}", file=sys.stderr)
    execution, response = [], []
    try:
        with paam.Client(priority=TOP_PRIORITY, models=sizes, socket=socket, wait=args.wait,
                         name=f"paam-profile-{args.model}") as client:
            for _ in tqdm(range(args.warmup), desc="warm-up", unit="run", file=sys.stderr,
                          disable=True if args.warmup == 0 else None, leave=False):
                client.infer(args.model, **inputs)
            for _ in tqdm(range(args.runs), desc="measuring", unit="run", file=sys.stderr,
                          disable=None):
                client.infer(args.model, **inputs)
                ts = client.timestamps(args.model)
                execution.append((ts["device_end"] - ts["device_start"]) / 1e6)
                response.append((ts["woken"] - ts["submitted"]) / 1e6)
            backend = _backend(socket)
    except PaamError as err:
        return _fail(f"'{args.model}': {type(err).__name__}: {err}")
    ex, rs = _summary(execution), _summary(response)
    wcet = round(ex["max"] * args.margin, 4)
    method = (f"max observed execution x {args.margin:g} over {args.runs} runs "
              f"(measurement-based estimate, not a proven bound)")
    print(f"execution (device end - start), ms: p50 {ex['p50']:.3f}  p99 {ex['p99']:.3f}  max {ex['max']:.3f}")
    print(f"response (woken - submitted),   ms: p50 {rs['p50']:.3f}  p99 {rs['p99']:.3f}  max {rs['max']:.3f}")
    print(f"WCET estimate: {wcet:.3f} ms = max execution {ex['max']:.3f} ms x margin {args.margin:g}")
    if args.output:
        record = {
            "wcet": wcet, "method": method, "runs": args.runs, "warmup": args.warmup,
            "execution_ms": ex, "response_ms": rs,
            "inputs": {n: list(s) for n, s in shapes.items()},
            "format": info.format, "device": info.device, "backend": backend,
            "machine": platform.node(),
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        }
        try:
            updated = _write_system(Path(args.output), args, record, wcet)
        except (OSError, ValueError) as err:
            return _fail(f"{args.output}: {err}")
        print(updated)
    return 0


def _dtype_of(info, name: str) -> str:
    return next(t.dtype for t in info.inputs if t.name == name)


def _other_clients(socket: str) -> int:
    try:
        from ..observe import stats
        return int(stats(socket)["totals"]["active_clients"])
    except Exception:  # noqa: BLE001 - the note is a courtesy; profiling goes on without it
        return 0


def _backend(socket: str) -> str:
    try:
        from ..observe import stats
        return str(stats(socket)["server"]["backend"])
    except Exception:  # noqa: BLE001
        return ""


def _write_system(path: Path, args: argparse.Namespace, record: dict, wcet: float) -> str:
    """Puts the estimate into the system description at ``path`` and returns what it did."""
    import yaml

    from ..analysis.model import InputError, parse_system
    model = args.model
    if path.exists():
        data = yaml.safe_load(path.read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError("not a system description (a YAML mapping)")
        segments = 0
        for chain in data.get("chains") or []:
            for cb in (chain or {}).get("callbacks") or []:
                for seg in (cb or {}).get("segments") or []:
                    if isinstance(seg, dict) and seg.get("model") == model:
                        seg["wcet"] = wcet
                        segments += 1
        data.setdefault("models", {})
        if not isinstance(data["models"], dict):
            raise ValueError("field 'models' must be a mapping")
        data["models"][model] = record
        what = (f"set the wcet of {segments} segment(s) that run '{model}' to {wcet:.3f} ms"
                if segments else
                f"no segment names model '{model}' yet: add `model: {model}` to the segments "
                "that run it (the measurement is kept under models:)")
    else:
        period = args.period_ms or max(1.0, round(10 * wcet, 3))
        data = {
            "description": f"Model '{model}' as profiled by paam profile; add the other chains.",
            "accelerators": {args.accelerator: {"buckets": 1, "overhead": 0.05, "preemption": 0}},
            "executors": {"ex0": {"cpu": 0, "priority": 90, "wait": args.wait}},
            "comm_cost": 0,
            "chains": [{"name": model, "priority": 1, "period": period, "callbacks": [
                {"name": model, "executor": "ex0", "wcet": 0,
                 "segments": [{"accelerator": args.accelerator, "model": model, "wcet": wcet}]}]}],
            "models": {model: record},
        }
        what = f"a new system with chain '{model}' (period {period:g} ms) whose segment takes {wcet:.3f} ms"
    try:
        parse_system(data)
    except InputError as err:
        raise ValueError(f"the result would not be a valid system description: {err}") from None
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100))
    os.replace(tmp, path)
    return f"wrote {path}: {what}"
