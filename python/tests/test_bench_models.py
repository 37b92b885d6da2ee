"""``paam bench models``: the statistics, table, summary and figure from fake results; the bench
run end to end on paamd's CPU backend with small models (skipped, saying why, where the model
plugin was not built); its errors. The GPU run is scripts/device_models_bench.sh's (and the last
test here, skipped without Python torch and a GPU)."""
import importlib.util
import json
import re
import subprocess
import sys

import pytest

from paam.bench import models_report as report
from paam.models import find_plugin, find_test_model_tool

needs_plugin = pytest.mark.skipif(
    find_plugin() is None or find_test_model_tool() is None,
    reason="the model plugin (libpaam_torch.so) is not next to paamd: libtorch was not found when paam was "
           "built (apt-get install libtorch-dev, then make install)")


def _fake() -> dict:
    return {
        "good": {"hp_alone": [1.0] * 99 + [2.0], "lp_alone_img_s": 1000.0,
                 "points": {"2": {"hp": [1.0] * 99 + [2.1], "lp_img_s": 900.0},
                            "1": {"hp": [1.5] * 100, "lp_img_s": 500.0}}},
        "failed": {"error": "runner 3 exited\nmore", "hp_alone": [1.0, 1.0], "points": {}},
        "absent": {"skipped": "needs the CUDA backend"},
    }


def test_derive_compares_each_point_with_the_methods_own_standalone():
    d = report.derive(_fake()["good"])
    alone = d["hp_alone_ms"]
    assert alone["n"] == 100 and alone["max"] == 2.0
    assert list(d["points"]) == ["1", "2"]               # in LP-count order
    one, two = d["points"]["1"], d["points"]["2"]
    assert one["p99_ratio"] == pytest.approx(1.5 / alone["p99"])
    assert one["lp_share"] == pytest.approx(0.5) and two["lp_share"] == pytest.approx(0.9)
    assert two["p99_ratio"] == pytest.approx(two["hp_ms"]["p99"] / alone["p99"])
    assert not report.meets_target(one)                  # LP at 50%
    assert report.meets_target({"p99_ratio": 1.05, "lp_share": 0.85})
    assert not report.meets_target({"p99_ratio": 1.2, "lp_share": 0.99})
    assert not report.meets_target({})                   # nothing measured meets nothing
    assert report.derive(_fake()["absent"]) == {"skipped": "needs the CUDA backend"}
    assert report.derive(_fake()["failed"])["error"].startswith("runner 3 exited")


def test_the_table_has_a_row_per_method_and_count_and_says_what_was_skipped_or_failed():
    derived = {k: report.derive(v) for k, v in _fake().items()}
    text = report.table(derived, "HEADER")
    assert text.startswith("HEADER")
    rows = [line for line in text.splitlines() if line.startswith("| good |")]
    assert [r.split("|")[2].strip() for r in rows] == ["0", "1", "2"]
    assert "50%" in rows[1] and "| no |" in rows[1]
    assert "| absent | — | skipped: needs the CUDA backend" in text
    assert "| failed | | failed: runner 3 exited |" in text     # the first line of the error only
    assert "target: HP p99 ≤ 1.10x" in text


def test_the_summary_is_small_and_has_what_docs_results_asks(tmp_path):
    payload = {"command": "paam bench models --quick", "date": "2026-11-27T00:00:00Z",
               "machine": {"gpu": "fake"}, "code_commit": "73e4d44", "results": _fake(),
               "config": {"hp": "resnet50 batch 1 at 30 Hz"}}
    derived = {k: report.derive(v) for k, v in payload["results"].items()}
    s = report.summary(payload, derived)
    text = json.dumps(s)
    assert s["experiment"] and re.fullmatch(r"[0-9a-f]{7,40}", s["raw_data"]["commit"]) and s["raw_data"]["paths"]
    for key in ("command", "machine", "date", "code_commit"):
        assert f'"{key}"' in text
    assert "hp" not in s["results"]["good"]                  # no raw series
    assert s["results"]["good"]["points"]["1"]["meets_target"] is False   # LP at 50%
    assert s["results"]["good"]["points"]["2"]["meets_target"] is True    # p99 1.00x, LP at 90%
    assert s["results"]["absent"] == {"skipped": "needs the CUDA backend"}
    assert len(text) < 64 * 1024
    assert report.plot(derived, tmp_path / "f.png", "title") and (tmp_path / "f.png").stat().st_size > 1000
    assert not report.plot({"absent": derived["absent"]}, tmp_path / "g.png", "t")


def _bench(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "paam.cli", "bench", "models", *args],
                          capture_output=True, text=True, timeout=timeout)


_SMALL = ["--backend", "cpu", "--hp-arch", "resnet18", "--lp-arch", "resnet18", "--lp-batch", "1",
          "--hp-hz", "20", "--seconds", "1", "--lp-seconds", "0.5", "--counts", "1", "2", "--source", "tool"]


@needs_plugin
def test_the_bench_runs_on_the_cpu_backend_and_says_why_methods_are_skipped(tmp_path):
    out = _bench(*_SMALL, "--methods", "paam", "inproc", "mps", "direct", "--out", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "paam: HP alone:" in out.stdout and "paam: 2 LP: HP p50" in out.stdout   # progress lines
    data = json.loads((tmp_path / "models.json").read_text())
    r = data["results"]["paam"]
    assert len(r["hp_alone"]) >= 10 and r["lp_alone_img_s"] > 0
    assert set(r["points"]) == {"1", "2"}
    for p in r["points"].values():
        assert len(p["hp"]) >= 10 and p["lp_img_s"] > 0
        assert all(d > 0 for d in p["hp_device"])        # paamd's device times of the HP requests
    assert data["results"]["inproc"] == {"skipped": "needs the CUDA backend"}
    assert data["results"]["mps"] == {"skipped": "needs the CUDA backend"}
    if importlib.util.find_spec("torch") is None:
        assert data["results"]["direct"] == {"skipped": "Python torch is not installed here"}
    assert "random weights" in data["models"]["hp"]["description"]
    summary = json.loads((tmp_path / "models_summary.json").read_text())
    assert summary["results"]["paam"]["points"]["2"]["lp_img_s"] > 0
    assert (tmp_path / "models.png").exists() and "| paam | 2 |" in (tmp_path / "models.md").read_text()


@needs_plugin
def test_a_method_that_fails_is_reported_with_paamds_log_and_the_bench_fails(tmp_path):
    out = _bench(*_SMALL, "--methods", "paam", "--server-args=--no-such-option", "--out", str(tmp_path))
    assert out.returncode == 1
    err = json.loads((tmp_path / "models.json").read_text())["results"]["paam"]["error"]
    assert "no-such-option" in err
    assert "| paam | | failed:" in out.stdout


@pytest.mark.parametrize("args, message", [
    (["--counts", "0"], "--counts must be between 1 and 16"),
    (["--hp-hz", "0"], "--hp-hz must be in (0, 1000]"),
    (["--seconds", "-1"], "--seconds must be positive"),
    (["--lp-batch", "0"], "--lp-batch must be in 1..512"),
])
def test_bad_arguments_are_named(args, message, tmp_path):
    out = _bench(*args, "--out", str(tmp_path), timeout=60)
    assert out.returncode == 2 and message in out.stderr


def _cuda_torch() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch
    return torch.cuda.is_available()


@needs_plugin
@pytest.mark.skipif(not _cuda_torch(), reason="needs Python torch with a GPU")
def test_every_method_measures_on_the_gpu(tmp_path):
    out = _bench("--hp-arch", "resnet18", "--lp-arch", "resnet18", "--lp-batch", "8", "--counts", "1",
                 "--seconds", "1", "--lp-seconds", "0.5", "--methods", "paam", "direct", "inproc",
                 "--out", str(tmp_path), timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads((tmp_path / "models.json").read_text())
    for method in ("paam", "direct", "inproc"):
        assert data["results"][method]["points"]["1"]["lp_img_s"] > 0, method


@needs_plugin
def test_one_host_runs_the_hp_and_several_lp_runners_as_the_inproc_method_does(tmp_path):
    """The in-process layout (HP and every LP runner in one process, LP on threads), driven as
    the GPU methods are, here with paam clients of a CPU-backend paamd."""
    import argparse

    import paam
    from paam import model_zoo
    from paam.bench import models as bench

    m = model_zoo.make_model(tmp_path, "r18", "resnet18", source="tool", max_batch=2)
    models = {role: {"path": m.path, "shape": [3, m.image, m.image], "dtype": "float32", "input": "images"}
              for role in ("hp", "lp")}
    args = argparse.Namespace(backend="cpu", lp_batch=2, seconds=1.0, lp_seconds=0.5, counts=[1, 2], hp_hz=20.0,
                              quick=True)
    with paam.testing.start_server(buckets=2, device_cpu=-2, extra_args=[
            "--model", f"{bench.HP_MODEL}={m.path}", "--model", f"{bench.LP_MODEL}={m.path}"]) as srv:
        hp, lp = bench._specs(args, models, "paam", srv.socket_path)
        run = bench.Run("layout", 2)
        try:
            run.start(hp, [(0, lp), (1, lp)])
            run.wait_ready(60)
            assert len(run.procs) == 1 and "bucket" in run.info[0]
            lines = []
            out = bench.measure(run, args, lp.batch, lines.append)
        finally:
            run.close()
    assert [line.split(":")[0] for line in lines] == ["HP alone", "LP alone", "1 LP", "2 LP"]
    assert out["lp_alone_img_s"] > 0 and all(out["points"][n]["lp_img_s"] > 0 for n in ("1", "2"))
    assert all(len(out["points"][n]["hp"]) >= 10 for n in ("1", "2"))
    assert not run.procs[0].is_alive()
