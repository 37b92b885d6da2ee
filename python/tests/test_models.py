"""Models served by paamd (docs/models.md): a small TorchScript model with random weights, made by
paam_make_test_model (no Python torch needed), through paamd on the CPU backend: infer sync and
async in every wait mode, the errors, `paam models`, and `paam profile` into a system
description that `paam analyze` accepts. Skipped, saying why, where the model plugin was not
built (libtorch not found); .ci/run installs Debian's libtorch-dev, so CI runs them."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import paam
from paam.models import find_plugin, find_test_model_tool, query_models

pytestmark = pytest.mark.skipif(
    find_plugin() is None or find_test_model_tool() is None,
    reason="the model plugin (libpaam_torch.so) is not next to paamd: libtorch was not found when "
           "paam was built (apt-get install libtorch-dev, then make install; docs/models.md)")


def _paam(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "paam.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """tiny.pt (images float32[-1,3,16,16] max batch 4, offset float32[10] -> logits float32[-1,10],
    features float32[-1,4]), its sidecar, and a sample: inputs of batch 2 and the outputs of
    running the saved module directly."""
    d = tmp_path_factory.mktemp("models")
    out = subprocess.run([str(find_test_model_tool()), str(d / "tiny.pt"), "--sample", str(d / "sample.json"),
                          "--batch", "2"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    sample = json.loads((d / "sample.json").read_text())

    def arrays(part):
        return {k: np.array(v["data"], dtype=np.float32).reshape(v["shape"]) for k, v in sample[part].items()}
    # "narrow": the same model, whose signature says it returns at most 2 rows (it may take 4)
    sig = json.loads((d / "tiny.pt.json").read_text())
    sig["outputs"][0]["max_shape"] = [2, 10]
    sig["outputs"][1]["max_shape"] = [2, 4]
    (d / "narrow.json").write_text(json.dumps(sig))
    (d / "models.json").write_text(json.dumps(
        {"models": [{"name": "narrow", "path": "tiny.pt", "sidecar": "narrow.json"}], "cpu_threads": 1}))
    return {"dir": d, "path": d / "tiny.pt", "inputs": arrays("inputs"), "outputs": arrays("outputs")}


@pytest.fixture(scope="module")
def model_server(tiny):
    with paam.testing.start_server(device_cpu=-2, extra_args=[
            "--model", f"tiny={tiny['path']}", "--models", str(tiny["dir"] / "models.json")]) as srv:
        yield srv


def _close(got, want):
    assert set(got) == set(want)
    for k in want:
        assert got[k].dtype == np.float32 and got[k].shape == want[k].shape, k
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("wait", ["spin", "suspend", "hybrid"])
def test_infer_returns_what_running_the_module_directly_returns(tiny, model_server, wait):
    with paam.Client(priority=5, models=["tiny"], socket=model_server.socket_path, wait=wait) as c:
        assert c.kernels == ["tiny"]
        assert [t.name for t in c.models["tiny"].inputs] == ["images", "offset"]
        _close(c.infer("tiny", **tiny["inputs"]), tiny["outputs"])
        fut = c.submit_infer("tiny", **tiny["inputs"])  # asynchronous
        _close(fut.result(timeout_sec=30), tiny["outputs"])
        assert fut.done()
        ts = c.timestamps("tiny")
        assert ts["device_end"] >= ts["device_start"] > 0


def test_models_and_kernels_share_a_client(tiny, model_server):
    with paam.Client(priority=5, kernels=["vector_add"], models=["tiny", "narrow"],
                     socket=model_server.socket_path) as c:
        assert c.kernels == ["vector_add", "tiny", "narrow"]
        np.testing.assert_allclose(c.request("vector_add", np.ones(3), np.ones(3)), [2, 2, 2])
        _close(c.infer("narrow", **tiny["inputs"]), tiny["outputs"])
        with pytest.raises(paam.errors.InvalidArgument, match="'vector_add' is a kernel, not a model"):
            c.infer("vector_add", x=np.ones(3))


def test_wrong_requests_get_errors_that_name_the_expectation_and_the_next_works(tiny, model_server):
    good = tiny["inputs"]
    with paam.Client(priority=5, models=["tiny", "narrow"], socket=model_server.socket_path) as c:
        with pytest.raises(paam.errors.InvalidArgument) as err:
            c.infer("tiny", images=good["images"].astype(np.float64), offset=good["offset"])
        assert str(err.value) == ("invalid_argument: model 'tiny': input 'images' must be float32[-1,3,16,16] "
                                  "(max [4,3,16,16]), got float64[2,3,16,16]")
        with pytest.raises(paam.errors.InvalidArgument, match=r"must be float32\[-1,3,16,16\] \(max "
                                                              r"\[4,3,16,16\]\), got float32\[2,3,8,8\]"):
            c.infer("tiny", images=np.zeros((2, 3, 8, 8), np.float32), offset=good["offset"])
        with pytest.raises(paam.errors.InvalidArgument, match="needs input 'offset' \\(float32\\[10\\]\\)"):
            c.infer("tiny", images=good["images"])
        with pytest.raises(paam.errors.InvalidArgument, match="has no input 'extra'"):
            c.infer("tiny", extra=np.zeros(3, np.float32), **good)
        with pytest.raises(paam.InputTooLarge, match="the inputs need"):
            c.infer("tiny", images=np.zeros((64, 3, 16, 16), np.float32), offset=good["offset"])
        with pytest.raises(paam.UnknownKernel, match="model 'detector' was not declared"):
            c.infer("detector", **good)
        with pytest.raises(paam.errors.InvalidArgument, match="named tensors"):
            c.request("tiny", good["images"])
        # an output larger than its signature declares
        with pytest.raises(paam.KernelFailed) as err:
            c.infer("narrow", images=np.zeros((3, 3, 16, 16), np.float32), offset=good["offset"])
        assert str(err.value) == ("kernel_failed: model 'narrow': output 'logits' is float32[3,10], its signature "
                                  "says float32[-1,10] (max [2,10])")
        # nothing else disturbed
        _close(c.infer("narrow", **good), tiny["outputs"])
        _close(c.submit_infer("tiny", **good).result(), tiny["outputs"])


def test_unknown_models_and_direct_mode_are_refused_at_registration(model_server):
    with pytest.raises(paam.UnknownKernel, match=r"unknown model 'detector' \(paamd at .* serves tiny, narrow\)"):
        paam.Client(models=["detector"], socket=model_server.socket_path)
    with pytest.raises(paam.errors.InvalidArgument, match="direct mode has no model plugin"):
        paam.Client(models=["tiny"], direct=True)


def test_query_models_gives_the_signatures(tiny, model_server):
    models = {m.name: m for m in query_models(model_server.socket_path)}
    assert set(models) == {"tiny", "narrow"}
    t = models["tiny"]
    assert (t.format, t.device, t.path) == ("torchscript", "cpu", str(tiny["path"]))
    assert [(s.name, s.dtype, s.shape, s.max_shape) for s in t.outputs] == [
        ("logits", "float32", [-1, 10], [4, 10]), ("features", "float32", [-1, 4], [4, 4])]
    assert t.max_input_bytes > 4 * 3 * 16 * 16 * 4 and t.max_output_bytes > 0


def test_paam_models_lists_them(tiny, model_server):
    r = _paam("models", "--socket", model_server.socket_path)
    assert r.returncode == 0, r.stderr
    assert "tiny  torchscript on cpu" in r.stdout and "narrow  torchscript on cpu" in r.stdout
    assert "in   images    float32[-1,3,16,16]  max [4,3,16,16]" in r.stdout
    assert "out  features  float32[-1,4]" in r.stdout
    r = _paam("models", "--socket", model_server.socket_path, "--json")
    assert [m["name"] for m in json.loads(r.stdout)["models"]] == ["tiny", "narrow"]


def test_paam_models_without_a_server_says_so(tmp_path):
    r = _paam("models", "--socket", str(tmp_path / "none.sock"))
    assert r.returncode == 2
    assert "paam models:" in r.stderr and "none.sock" in r.stderr


def test_profile_writes_a_system_that_analyze_accepts_and_updates_it(tiny, model_server, tmp_path):
    out = tmp_path / "system.yaml"
    r = _paam("profile", "tiny", "--socket", model_server.socket_path, "--runs", "20", "--warmup", "2",
              "--shape", "images=2,3,16,16", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "WCET estimate:" in r.stdout and "x margin 1.2" in r.stdout
    assert "p50" in r.stdout and "p99" in r.stdout and "max" in r.stdout
    data = yaml.safe_load(out.read_text())
    record = data["models"]["tiny"]
    assert record["runs"] == 20 and "max observed execution x 1.2" in record["method"]
    assert record["inputs"]["images"] == [2, 3, 16, 16]
    seg = data["chains"][0]["callbacks"][0]["segments"][0]
    assert seg["model"] == "tiny" and seg["wcet"] == record["wcet"] > 0
    assert record["wcet"] == pytest.approx(record["execution_ms"]["max"] * 1.2, rel=1e-3)
    r = _paam("analyze", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    # again: the segment that names the model gets the new estimate, the rest stays
    data["chains"][0]["callbacks"][0]["segments"][0]["wcet"] = 999.0
    data["chains"][0]["period"] = 5000
    out.write_text(yaml.safe_dump(data))
    r = _paam("profile", "tiny", "--socket", model_server.socket_path, "--runs", "5", "--warmup", "0",
              "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "set the wcet of 1 segment(s)" in r.stdout
    again = yaml.safe_load(out.read_text())
    assert again["chains"][0]["callbacks"][0]["segments"][0]["wcet"] < 999.0
    assert again["chains"][0]["period"] == 5000
    assert again["models"]["tiny"]["inputs"]["images"] == [4, 3, 16, 16]  # max_shape by default


def test_profile_refuses_bad_input(model_server, tmp_path):
    r = _paam("profile", "detector", "--socket", model_server.socket_path)
    assert r.returncode == 2 and "serves no model 'detector' (its models: tiny, narrow)" in r.stderr
    r = _paam("profile", "tiny", "--socket", model_server.socket_path, "--shape", "pixels=1")
    assert r.returncode == 2 and "has no input 'pixels'" in r.stderr
    r = _paam("profile", "tiny", "--socket", model_server.socket_path, "--runs", "0")
    assert r.returncode == 2 and "--runs must be at least 1" in r.stderr


def test_paamd_refuses_to_start_when_a_signature_does_not_describe_its_model(tiny, tmp_path):
    sig = json.loads((tiny["dir"] / "tiny.pt.json").read_text())
    sig["outputs"][0]["shape"] = [-1, 12]
    del sig["outputs"][0]["max_shape"]
    (tmp_path / "bad.json").write_text(json.dumps(sig))
    (tmp_path / "models.json").write_text(json.dumps(
        {"models": [{"name": "bad", "path": str(tiny["path"]), "sidecar": "bad.json"}]}))
    with pytest.raises(paam.PaamError) as err:
        with paam.testing.start_server(device_cpu=-2, extra_args=["--models", str(tmp_path / "models.json")]):
            pass
    assert "does not match the signature in" in str(err.value)
    assert "output 'logits' is float32[1,10], its signature says float32[-1,12]" in str(err.value)


def test_paamd_names_a_missing_plugin(tiny, tmp_path):
    with pytest.raises(paam.PaamError, match="--model-plugin: no readable file at /nonexistent.so"):
        with paam.testing.start_server(device_cpu=-2, extra_args=[
                "--model", f"tiny={tiny['path']}", "--model-plugin", "/nonexistent.so"]):
            pass
