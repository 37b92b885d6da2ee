"""Models with random weights for the examples and benchmarks: nothing is downloaded.

``python -m paam.model_zoo OUT_DIR --model detector=resnet18 --model heavy=resnet50`` writes
``OUT_DIR/detector.pt`` (TorchScript) with its signature ``detector.pt.json``, the same for
``heavy``, and ``OUT_DIR/models.json`` (what was made, how, and the paamd arguments that serve
it). Where each network comes from, in order (``--source`` picks one):

* ``torchvision``: the torchvision architecture (``resnet18``, ``resnet50``) with
  ``weights=None``, so random weights: the same layers, kernels and cost as the trained
  network, without a download;
* ``torch``: where torchvision is missing, the same ResNet written here in ``torch.nn``
  (torchvision's layout: basic blocks for ResNet-18, bottlenecks for ResNet-50);
* ``tool``: where Python has no torch at all (CI, a machine with only Debian's libtorch), the
  C++ tool ``paam_make_test_model --arch convnet`` (built with the model plugin) writes a
  residual convolutional network in the model's place: a small one for ``resnet18``, a larger
  one for ``resnet50``. Its images are smaller (a CPU runs it in milliseconds); the models.json
  record says what it is.

With torch the network is traced (``torch.jit.trace``), frozen (batch norms folded into the
convolutions) where torch can, checked after loading it back, and saved with a signature whose
batch dimension varies up to ``--max-batch``: ``images <dtype>[-1,3,S,S] -> logits
<dtype>[-1,1000]``. ``--device cuda --dtype float16`` makes what the GPU benchmark runs.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

ARCHS = ("resnet18", "resnet50")
SOURCES = ("auto", "torchvision", "torch", "tool")
# paam_make_test_model --arch convnet in place of each architecture: (image, width, depth).
# About 0.17 and 2.4 GFLOP per image, a few and a few tens of milliseconds on one CPU core.
TOOL_STANDINS = {"resnet18": (96, 32, 4), "resnet50": (128, 64, 8)}


@dataclass
class MadeModel:
    """One model written by :func:`make_model`."""
    name: str
    arch: str
    path: str
    source: str        # torchvision | torch | tool
    description: str   # what the network is, in words
    image: int
    dtype: str
    max_batch: int
    device: str        # where it was traced (paamd loads it onto its own device)

    def serve_arg(self) -> str:
        """paamd's ``--model`` value."""
        return f"{self.name}={self.path}"


def available_source() -> str:
    """What ``auto`` picks here: torchvision, torch or tool (no Python torch)."""
    if importlib.util.find_spec("torch") is None:
        return "tool"
    return "torchvision" if importlib.util.find_spec("torchvision") is not None else "torch"


def _resnet_nn(arch: str, num_classes: int = 1000):
    """ResNet-18 / ResNet-50 in torch.nn, torchvision's layout (for machines without torchvision)."""
    import torch
    from torch import nn

    class Basic(nn.Module):
        expansion = 1

        def __init__(self, cin, c, stride):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, c, 3, stride, 1, bias=False), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)
            self.down = (nn.Sequential(nn.Conv2d(cin, c, 1, stride, bias=False), nn.BatchNorm2d(c))
                         if stride != 1 or cin != c else nn.Identity())

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(y)) + self.down(x))

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, cin, c, stride):
            super().__init__()
            out = c * 4
            self.conv1, self.bn1 = nn.Conv2d(cin, c, 1, bias=False), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = nn.Conv2d(c, c, 3, stride, 1, bias=False), nn.BatchNorm2d(c)
            self.conv3, self.bn3 = nn.Conv2d(c, out, 1, bias=False), nn.BatchNorm2d(out)
            self.down = (nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))
                         if stride != 1 or cin != out else nn.Identity())

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = torch.relu(self.bn2(self.conv2(y)))
            return torch.relu(self.bn3(self.conv3(y)) + self.down(x))

    block, layers = {"resnet18": (Basic, [2, 2, 2, 2]), "resnet50": (Bottleneck, [3, 4, 6, 3])}[arch]
    mods: list = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for i, n in enumerate(layers):
        c = 64 * 2 ** i
        for j in range(n):
            mods.append(block(cin, c, 2 if (j == 0 and i > 0) else 1))
            cin = c * block.expansion
    mods += [nn.AdaptiveAvgPool2d(1), nn.Flatten(1), nn.Linear(cin, num_classes)]
    return nn.Sequential(*mods)


def _network(arch: str, source: str):
    if source == "torchvision":
        import torchvision
        net = getattr(torchvision.models, arch)(weights=None)
        return net, f"torchvision.models.{arch}(weights=None), random weights"
    return _resnet_nn(arch), f"{arch} in torch.nn (paam.model_zoo, torchvision's layout), random weights"


def _signature(dtype: str, image: int, max_batch: int, classes: int) -> dict:
    return {"inputs": [{"name": "images", "dtype": dtype, "shape": [-1, 3, image, image],
                        "max_shape": [max_batch, 3, image, image]}],
            "outputs": [{"name": "logits", "dtype": dtype, "shape": [-1, classes],
                         "max_shape": [max_batch, classes]}]}


def _make_torch(name: str, arch: str, out: Path, source: str, image: int, max_batch: int, dtype: str,
                device: str) -> MadeModel:
    import torch
    net, description = _network(arch, source)
    tdtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    net = net.eval().to(device=device, dtype=tdtype)
    example = torch.randn(2, 3, image, image, device=device, dtype=tdtype)
    with torch.no_grad():
        traced = torch.jit.trace(net, example)
        try:  # folds the batch norms into the convolutions: fewer kernels per run
            traced = torch.jit.freeze(traced)
            description += ", traced and frozen"
        except Exception as exc:  # noqa: BLE001 - the unfrozen module runs the same network
            description += f", traced (not frozen: {type(exc).__name__})"
        path = out / f"{name}.pt"
        traced.save(str(path))
        loaded = torch.jit.load(str(path), map_location=device)
        got = loaded(example)
    if tuple(got.shape) != (2, 1000) or got.dtype != tdtype:
        raise RuntimeError(f"{path}: the saved module returns {got.dtype}{list(got.shape)}, "
                           f"expected {tdtype}[2, 1000]")
    (out / f"{name}.pt.json").write_text(json.dumps(_signature(dtype, image, max_batch, 1000), indent=1))
    return MadeModel(name, arch, str(path), source, description, image, dtype, max_batch, device)


def _make_tool(name: str, arch: str, out: Path, max_batch: int, tool: str | None) -> MadeModel:
    from .models import find_test_model_tool
    exe = tool or find_test_model_tool()
    if exe is None:
        raise RuntimeError("no Python torch here and no paam_make_test_model beside paamd (it is built "
                           "with the model plugin where libtorch is found: apt-get install libtorch-dev, "
                           "then make install; docs/models.md)")
    image, width, depth = TOOL_STANDINS[arch]
    path = out / f"{name}.pt"
    cmd = [str(exe), str(path), "--arch", "convnet", "--image", str(image), "--width", str(width),
           "--depth", str(depth), "--max-batch", str(max_batch), "--classes", "1000"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
    gflop = 18 * (image // 2) ** 2 * width ** 2 * depth / 1e9
    description = (f"paam_make_test_model --arch convnet (image {image}, width {width}, depth {depth}: "
                   f"{gflop:.2f} GFLOP per image) in place of {arch}, random weights")
    return MadeModel(name, arch, str(path), "tool", description, image, "float32", max_batch, "cpu")


def make_model(out_dir: str | Path, name: str, arch: str, *, source: str = "auto", image: int = 224,
               max_batch: int = 4, dtype: str = "float32", device: str = "cpu",
               tool: str | None = None) -> MadeModel:
    """Writes ``out_dir/<name>.pt`` and its signature; returns what it made (see the module
    docstring for ``source``; ``image`` and ``dtype`` apply to the torch sources)."""
    if arch not in ARCHS:
        raise ValueError(f"unknown architecture '{arch}': one of {', '.join(ARCHS)}")
    if source not in SOURCES:
        raise ValueError(f"unknown source '{source}': one of {', '.join(SOURCES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    src = available_source() if source == "auto" else source
    if src == "tool":
        return _make_tool(name, arch, out, max_batch, tool)
    for module in ("torch", "torchvision")[:2 if src == "torchvision" else 1]:
        if importlib.util.find_spec(module) is None:
            raise RuntimeError(f"source {src}, but {module} is not installed here (source tool needs neither)")
    try:
        return _make_torch(name, arch, out, src, image, max_batch, dtype, device)
    except Exception as exc:  # noqa: BLE001 - torchvision's network would not trace: the torch.nn one
        if source != "auto" or src != "torchvision":
            raise
        made = _make_torch(name, arch, out, "torch", image, max_batch, dtype, device)
        made.description += f" (torchvision's failed: {type(exc).__name__}: {str(exc)[:200]})"
        return made


def make_models(out_dir: str | Path, models: dict[str, str], **kw) -> list[MadeModel]:
    """``models``: name -> architecture. Writes each and ``out_dir/models.json``."""
    made = [make_model(out_dir, name, arch, **kw) for name, arch in models.items()]
    write_manifest(out_dir, made)
    return made


def write_manifest(out_dir: str | Path, made: Sequence[MadeModel]) -> Path:
    path = Path(out_dir) / "models.json"
    path.write_text(json.dumps({"models": [asdict(m) for m in made],
                                "paamd_args": [a for m in made for a in ("--model", m.serve_arg())]}, indent=1))
    return path


def read_manifest(out_dir: str | Path) -> list[MadeModel]:
    data = json.loads((Path(out_dir) / "models.json").read_text())
    return [MadeModel(**m) for m in data["models"]]


def _pair(text: str) -> tuple[str, str]:
    name, sep, arch = text.partition("=")
    if not sep or not name or arch not in ARCHS:
        raise argparse.ArgumentTypeError(f"'{text}': give NAME=ARCH with ARCH one of {', '.join(ARCHS)}")
    return name, arch


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paam.model_zoo",
                                 description="Writes TorchScript models with random weights (nothing is "
                                             "downloaded) and their signatures for paamd --model.")
    ap.add_argument("out", type=Path, help="folder to write into")
    ap.add_argument("--model", dest="models", type=_pair, action="append", metavar="NAME=ARCH",
                    help=f"a model to make (repeatable; ARCH: {', '.join(ARCHS)}); "
                         "default detector=resnet18 heavy=resnet50")
    ap.add_argument("--source", default="auto", choices=SOURCES,
                    help="where the networks come from (default auto: torchvision, else torch.nn, else "
                         "paam_make_test_model)")
    ap.add_argument("--image", type=int, default=224, help="image side of the torch sources (default 224)")
    ap.add_argument("--max-batch", type=int, default=4, help="largest batch in the signature (default 4)")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    ap.add_argument("--device", default="cpu", help="where torch traces the network: cpu or cuda (default cpu)")
    args = ap.parse_args(argv)
    if args.image < 32 or args.max_batch < 1:
        ap.error("--image must be at least 32 and --max-batch at least 1")
    models = dict(args.models or [("detector", "resnet18"), ("heavy", "resnet50")])
    t0 = time.monotonic()
    try:
        made = make_models(args.out, models, source=args.source, image=args.image, max_batch=args.max_batch,
                           dtype=args.dtype, device=args.device)
    except (RuntimeError, ValueError) as exc:
        print(f"paam.model_zoo: {exc}", file=sys.stderr)
        return 1
    for m in made:
        print(f"{m.name}: {m.path} ({m.description})")
    print(f"wrote {Path(args.out) / 'models.json'} in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
