"""``paam models``: the models a paamd serves and their signatures (docs/models.md)."""
from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "models", help="list the models paamd serves and their input/output tensors",
        description="Asks paamd (started with --model NAME=PATH or --models FILE) which models it "
                    "serves: each one's format, file and device, its named input and output "
                    "tensors (dtype and shape; -1 marks a dimension that varies, bounded by its "
                    "max) and the region sizes a client declares for it.")
    p.add_argument("--socket", default=None,
                   help="paamd's socket (default: $PAAM_SOCKET or the default path)")
    p.add_argument("--json", action="store_true", help="print paamd's answer as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from .. import _core
    from ..client import default_socket_path
    from ..errors import PaamError
    from ..models import ModelInfo
    socket = args.socket or default_socket_path()
    try:
        text = _core.query_models(socket, 5000)
    except PaamError as err:
        print(f"paam models: {socket}: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(json.loads(text), indent=2))
        return 0
    models = [ModelInfo.from_json(m) for m in json.loads(text)["models"]]
    if not models:
        print(f"paamd at {socket} serves no models (start it with --model NAME=PATH; docs/models.md)")
        return 0
    for i, m in enumerate(models):
        if i:
            print()
        print(f"{m.name}  {m.format or 'kernel'} on {m.device or '?'}  {m.path}")
        width = max(len(t.name) for t in m.inputs + m.outputs) if m.inputs + m.outputs else 0
        for kind, specs in (("in ", m.inputs), ("out", m.outputs)):
            for t in specs:
                shape = f"{t.dtype}[{','.join(map(str, t.shape))}]"
                bound = f"  max [{','.join(map(str, t.max_shape))}]" if t.max_shape else ""
                print(f"  {kind}  {t.name:<{width}}  {shape}{bound}")
        if m.max_input_bytes and m.max_output_bytes:
            print(f"  region: {m.max_input_bytes:,} bytes in, {m.max_output_bytes:,} bytes out")
        else:
            print("  region: unbounded (a dimension has no max): clients declare the sizes")
    return 0
