"""The command line: kernels, demo and overhead benchmark smoke runs (scaled down)."""
import json
import subprocess
import sys


def _paam(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "paam.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_kernels_lists_the_builtins():
    r = _paam("kernels")
    assert r.returncode == 0, r.stderr
    for k in ["vector_add", "matmul", "reduction", "histogram", "spin"]:
        assert k in r.stdout


def test_demo_runs_both_modes_and_prints_the_table(tmp_path):
    r = _paam("demo", "--duration", "1.5", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "paam p50" in r.stdout and "direct p50" in r.stdout
    data = json.loads((tmp_path / "demo.json").read_text())
    rows = {row["chain"]: row for row in data["rows"]}
    assert rows["critical"]["samples"]["paam"] > 0 and rows["critical"]["samples"]["direct"] > 0


def test_overhead_benchmark_writes_its_report(tmp_path):
    r = _paam("bench", "overhead", "--requests", "2000", "--payloads", "8,65536", "--waits", "spin,suspend",
              "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "overhead.json").read_text())
    assert len(data["results"]) == 4
    for res in data["results"]:
        rt = res["stages"]["round_trip"]
        assert 0 < rt["p50_us"] <= rt["p99_us"] <= rt["max_us"]
    assert "| spin | 8 B |" in (tmp_path / "overhead.md").read_text()
