"""Models with random weights for the examples and benchmarks (paam.model_zoo), and the convnet of
``paam_make_test_model --arch convnet`` that stands in for them where Python has no torch: served
by paamd, it answers what running the saved module directly answers. Skipped, saying why, where
the model plugin was not built; the torch sources only where Python has torch."""
import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

import paam
from paam import model_zoo
from paam.models import find_plugin, find_test_model_tool

needs_plugin = pytest.mark.skipif(
    find_plugin() is None or find_test_model_tool() is None,
    reason="the model plugin (libpaam_torch.so) is not next to paamd: libtorch was not found when paam was "
           "built (apt-get install libtorch-dev, then make install)")
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="Python torch is not installed")


@needs_plugin
def test_the_convnet_served_by_paamd_answers_what_the_saved_module_answers(tmp_path):
    tool = str(find_test_model_tool())
    out = subprocess.run([tool, str(tmp_path / "c.pt"), "--arch", "convnet", "--image", "24", "--width", "8",
                          "--depth", "3", "--classes", "7", "--max-batch", "3", "--sample", str(tmp_path / "s.json"),
                          "--batch", "2"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    sig = json.loads((tmp_path / "c.pt.json").read_text())
    assert sig["inputs"] == [{"name": "images", "dtype": "float32", "shape": [-1, 3, 24, 24],
                              "max_shape": [3, 3, 24, 24]}]
    assert [(o["name"], o["shape"], o["max_shape"]) for o in sig["outputs"]] == [
        ("logits", [-1, 7], [3, 7]), ("features", [-1, 8], [3, 8])]
    sample = json.loads((tmp_path / "s.json").read_text())

    def arrays(part):
        return {k: np.array(v["data"], np.float32).reshape(v["shape"]) for k, v in sample[part].items()}
    with paam.testing.start_server(device_cpu=-2, extra_args=["--model", f"conv={tmp_path / 'c.pt'}"]) as srv:
        with paam.Client(priority=1, models=["conv"], socket=srv.socket_path) as c:
            got = c.infer("conv", **arrays("inputs"))
    want = arrays("outputs")
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5)


@needs_plugin
@pytest.mark.parametrize("args, message", [
    (["--arch", "vgg"], "--arch must be tiny or convnet, got 'vgg'"),
    (["--width", "8"], "--image, --width, --depth and --classes go with --arch convnet"),
    (["--arch", "convnet", "--image", "2"], "--image needs an integer in 4..1024, got '2'"),
    (["--sample", "s.json", "--batch", "9"], "--batch 9 is over --max-batch 4"),
])
def test_the_tool_names_what_is_wrong(args, message, tmp_path):
    out = subprocess.run([str(find_test_model_tool()), str(tmp_path / "m.pt"), *args], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2 and message in out.stderr


@needs_plugin
def test_without_torch_the_zoo_makes_convnets_and_a_manifest_paamd_serves(tmp_path):
    made = model_zoo.make_models(tmp_path, {"detector": "resnet18", "heavy": "resnet50"}, source="tool",
                                 max_batch=2)
    assert [m.source for m in made] == ["tool", "tool"]
    assert "in place of resnet50" in made[1].description and "random weights" in made[1].description
    again = model_zoo.read_manifest(tmp_path)
    assert [m.name for m in again] == ["detector", "heavy"] and again[0].path == made[0].path
    args = json.loads((tmp_path / "models.json").read_text())["paamd_args"]
    assert args == ["--model", f"detector={made[0].path}", "--model", f"heavy={made[1].path}"]
    with paam.testing.start_server(device_cpu=-2, extra_args=args, timeout_sec=60) as srv:
        with paam.Client(priority=1, models=["detector"], socket=srv.socket_path) as c:
            out = c.infer("detector", images=np.zeros((2, 3, made[0].image, made[0].image), np.float32))
    assert out["logits"].shape == (2, 1000)


def test_the_zoo_refuses_what_it_cannot_make(tmp_path):
    with pytest.raises(ValueError, match="unknown architecture 'vgg'"):
        model_zoo.make_model(tmp_path, "m", "vgg")
    with pytest.raises(ValueError, match="unknown source 'hub'"):
        model_zoo.make_model(tmp_path, "m", "resnet18", source="hub")
    if importlib.util.find_spec("torch") is None:
        with pytest.raises(RuntimeError, match="torch is not installed here"):
            model_zoo.make_model(tmp_path, "m", "resnet18", source="torch")
    out = subprocess.run([sys.executable, "-m", "paam.model_zoo", str(tmp_path), "--model", "x=vgg"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "give NAME=ARCH with ARCH one of resnet18, resnet50" in out.stderr


@needs_torch
@pytest.mark.parametrize("source", ["torch", "auto"])
def test_with_torch_the_zoo_traces_a_resnet_that_loads_back(tmp_path, source):
    import torch
    m = model_zoo.make_model(tmp_path, "r", "resnet18", source=source, image=64, max_batch=2)
    assert m.source in ("torch", "torchvision") and "random weights" in m.description
    sig = json.loads((tmp_path / "r.pt.json").read_text())
    assert sig["inputs"][0]["shape"] == [-1, 3, 64, 64] and sig["outputs"][0]["max_shape"] == [2, 1000]
    y = torch.jit.load(m.path)(torch.zeros(1, 3, 64, 64))
    assert tuple(y.shape) == (1, 1000)
