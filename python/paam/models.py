"""Models served by paamd (docs/models.md): their signatures, and the model plugin's files.

``paamd --model NAME=PATH`` serves a PyTorch model (TorchScript ``.pt``, or an AOTInductor
``.pt2`` where its libtorch has them) as a kernel named NAME, through the model plugin
``libpaam_torch.so`` next to paamd. :func:`query_models` asks paamd which models it serves and
their named input and output tensors; ``paam.Client(models=[...])`` sizes its regions from
them and :meth:`paam.Client.infer` runs them.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import _core
from .errors import InvalidArgument, UnknownKernel
from .tensors import describe

PLUGIN_FILE = "libpaam_torch.so"
TEST_MODEL_TOOL = "paam_make_test_model"


@dataclass
class TensorSpec:
    """One named tensor of a signature; -1 in ``shape`` marks a dimension that varies, bounded
    by ``max_shape`` where given."""
    name: str
    dtype: str
    shape: list[int]
    max_shape: list[int] | None = None

    def __str__(self) -> str:
        text = f"{self.name}: {describe(self.dtype, self.shape)}"
        return text + (f" (max [{','.join(map(str, self.max_shape))}])" if self.max_shape else "")


@dataclass
class ModelInfo:
    """A model as paamd serves it."""
    name: str
    format: str = ""
    path: str = ""
    device: str = ""
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)
    max_input_bytes: int = 0   # 0: a dimension has no bound
    max_output_bytes: int = 0

    @classmethod
    def from_json(cls, m: dict) -> "ModelInfo":
        def specs(key: str) -> list[TensorSpec]:
            return [TensorSpec(t["name"], t["dtype"], list(t["shape"]), t.get("max_shape"))
                    for t in m.get(key, [])]
        return cls(m["name"], m.get("format", ""), m.get("path", ""), m.get("device", ""),
                   specs("inputs"), specs("outputs"), int(m.get("max_input_bytes") or 0),
                   int(m.get("max_output_bytes") or 0))


def query_models(socket: str | os.PathLike | None = None, timeout_sec: float = 5.0) -> list[ModelInfo]:
    """The models the paamd at ``socket`` (None: the default path) serves. Raises
    ServerNotRunning, PermissionDenied, or ProtocolError for a paamd too old to answer."""
    text = _core.query_models(os.fspath(socket) if socket is not None else "", int(timeout_sec * 1000))
    return [ModelInfo.from_json(m) for m in json.loads(text)["models"]]


def model_declarations(models, infos: list[ModelInfo], socket_label: str) -> list[tuple[str, int, int]]:
    """(name, max input bytes, max output bytes) of each requested model: ``models`` is a list
    of names, or a mapping name -> None (sizes from the signature) or (max_in, max_out)."""
    items = models.items() if isinstance(models, dict) else ((m, None) for m in models)
    by_name = {m.name: m for m in infos}
    out = []
    for name, size in items:
        info = by_name.get(name)
        if info is None:
            served = ", ".join(by_name) or "no models: start it with --model NAME=PATH"
            raise UnknownKernel(f"unknown model '{name}' (paamd at {socket_label} serves {served})")
        if size is None:
            if not info.max_input_bytes or not info.max_output_bytes:
                raise InvalidArgument(f"model '{name}' has a dimension without a bound (-1 without "
                                      "max_shape in its signature): give its sizes, "
                                      f"models={{'{name}': (max_input_bytes, max_output_bytes)}}")
            size = (info.max_input_bytes, info.max_output_bytes)
        out.append((name, int(size[0]), int(size[1])))
    return out


def _beside_paamd(file: str) -> Path | None:
    from .testing import find_paamd
    try:
        path = Path(find_paamd()).resolve().parent / file
    except Exception:  # noqa: BLE001 - no paamd: nothing beside it
        return None
    return path if path.exists() else None


def find_plugin() -> Path | None:
    """The model plugin paamd would load: $PAAM_MODEL_PLUGIN, else the one next to paamd; None
    where it was not built (libtorch was not found: apt-get install libtorch-dev)."""
    env = os.environ.get("PAAM_MODEL_PLUGIN")
    if env:
        return Path(env) if Path(env).exists() else None
    return _beside_paamd(PLUGIN_FILE)


def find_test_model_tool() -> Path | None:
    """``paam_make_test_model`` (built with the plugin), which writes a small TorchScript model
    with random weights and its signature; None where it was not built."""
    return _beside_paamd(TEST_MODEL_TOOL)
