"""Makes an AOTInductor package (.pt2) of the test model that paam_make_test_model writes, with
the same weights, for the model plugin's test on a GPU (scripts/device_models.sh):

    python3 scripts/make_aoti_model.py DIR/tiny.pt [--device cuda]

reads DIR/tiny.pt (TorchScript: its parameters), rebuilds the network as an nn.Module, exports
it with torch.export (batch varying from 1 to the signature's max) and packages it with
torch._inductor.aoti_compile_and_package into DIR/tiny.pt2, beside a copy of the signature
(DIR/tiny.pt2.json). Needs PyTorch 2.6 or later.
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

import torch


class Tiny(torch.nn.Module):
    """The network of paam_make_test_model (core/src/models/make_test_model.cc)."""

    def __init__(self, script: torch.jit.ScriptModule):
        super().__init__()
        for name in ("conv_w", "conv_b", "fc_w", "fc_b"):
            self.register_buffer(name, getattr(script, name).detach().clone())

    def forward(self, images, offset):
        x = torch.relu(torch.conv2d(images, self.conv_w, self.conv_b, [1, 1], [1, 1]))
        features = torch.mean(x, [2, 3])
        logits = torch.nn.functional.linear(torch.flatten(x, 1), self.fc_w, self.fc_b) + offset
        return logits, features


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path, help="the TorchScript file of paam_make_test_model")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = ap.parse_args()
    sig = json.loads(Path(str(args.model) + ".json").read_text())
    max_batch = sig["inputs"][0]["max_shape"][0]
    module = Tiny(torch.jit.load(str(args.model))).to(args.device).eval()
    example = (torch.zeros(2, 3, 16, 16, device=args.device), torch.zeros(10, device=args.device))
    batch = torch.export.Dim("batch", min=1, max=max_batch)
    exported = torch.export.export(module, example, dynamic_shapes=({0: batch}, None))
    out = args.model.with_suffix(".pt2")
    torch._inductor.aoti_compile_and_package(exported, package_path=str(out))
    shutil.copy(str(args.model) + ".json", str(out) + ".json")
    print(f"wrote {out} and {out}.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
