"""``paam eval wait-strategies``: smoke runs at CI scale, the joining of runs from their raw
files, and the refusal of an unknown configuration.

Lower bounds only: timings on a shared CI machine are noisy.
"""
import json

import pytest

from eval_helpers import _paam


def test_wait_strategies_measures_every_configuration(tmp_path):
    configs = ("paam-spin", "paam-suspend", "paam-hybrid", "direct-processes", "direct-threads")
    r = _paam("eval", "wait-strategies", "--quick", "--iterations", "120", "--kernel-ms", "0.3",
              "--configs", ",".join(configs), "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "summary.json").read_text())
    warmup = data["params"]["warmup"]
    assert set(data["results"]) == set(configs)
    for config, res in data["results"].items():
        req, frame, dev = res["request"], res["frame"], res["device"]
        assert req["n"] == 2 * (120 - warmup), config
        # The kernel occupies the device for 0.3 ms: no request can be faster than that, and a
        # frame of two units sharing one device takes at least both kernels.
        assert dev["min"] >= 0.29 * 1e3, config
        assert req["min"] >= dev["min"] * 0.99, config
        assert frame["min"] >= 2 * 0.29 * 1e3, config
        assert req["min"] <= req["mean"] <= req["max"]
        assert req["p2v"] == pytest.approx(req["max"] - req["min"])
    assert "MMET" in r.stdout and "direct-threads" in r.stdout and "paam-hybrid" in r.stdout
    for f in ("summary.csv", "histograms.png", "profiles.png", "raw/paam-spin.npz",
              "raw/paam-hybrid.npz"):
        assert (tmp_path / f).stat().st_size > 0


def test_wait_strategies_runs_concurrently_and_joins_runs_from_raw(tmp_path):
    a, b, joined = tmp_path / "a", tmp_path / "b", tmp_path / "joined"
    common = ("eval", "wait-strategies", "--units", "1", "--kernel-ms", "0.2", "--configs",
              "paam-suspend", "--no-plots")
    r = _paam(*common, "--iterations", "100", "--concurrent", "--out", str(a))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "paam-suspend: CPUs" in r.stdout
    assert "frames" in (a / "parts" / "paam-suspend" / "run.log").read_text()
    first = json.loads((a / "summary.json").read_text())
    assert first["results"]["paam-suspend"]["request"]["n"] == 100 - first["params"]["warmup"]
    assert (a / "raw" / "paam-suspend.npz").stat().st_size > 0
    r = _paam(*common, "--iterations", "60", "--out", str(b))
    assert r.returncode == 0, r.stdout + r.stderr
    second = json.loads((b / "summary.json").read_text())
    r = _paam("eval", "wait-strategies", "--from-raw", str(a), str(b), "--out", str(joined))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "paam-suspend: 2 runs joined" in r.stdout
    data = json.loads((joined / "summary.json").read_text())
    assert list(data["results"]) == ["paam-suspend"]  # the other configurations have no files
    req = data["results"]["paam-suspend"]["request"]
    # Each run's warm-up frames are dropped before the two are joined.
    assert req["n"] == (100 - first["params"]["warmup"]) + (60 - second["params"]["warmup"])
    assert req["max"] == pytest.approx(max(first["results"]["paam-suspend"]["request"]["max"],
                                           second["results"]["paam-suspend"]["request"]["max"]))
    assert (joined / "profiles.png").stat().st_size > 0
    r = _paam("eval", "wait-strategies", "--from-raw", str(tmp_path / "nothing"),
              "--out", str(joined))
    assert r.returncode != 0 and "not a folder" in r.stderr


def test_eval_rejects_an_unknown_configuration(tmp_path):
    r = _paam("eval", "wait-strategies", "--quick", "--configs", "paam-telepathy",
              "--out", str(tmp_path))
    assert r.returncode != 0
    assert "paam-telepathy" in r.stderr

