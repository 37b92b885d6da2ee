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
    assert "p99 change" in r.stdout and "max change" in r.stdout
    crit = rows["critical"]
    for q in ("p99", "max"):
        want = (crit["paam"][q] - crit["direct"][q]) / crit["direct"][q] * 100
        assert abs(crit["change_pct"][q] - want) < 1e-9


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


def test_serve_passes_every_option_to_paamd(tmp_path):
    import os
    import time

    import paam

    r = _paam("serve", "--help", timeout=30)
    assert r.returncode == 0, r.stderr
    assert "usage: paamd" in r.stdout and "--buckets" in r.stdout
    r = _paam("serve", "--no-such-option", timeout=30)
    assert r.returncode != 0 and "--no-such-option" in r.stdout + r.stderr

    sock = str(tmp_path / "paamd.sock")
    proc = subprocess.Popen([sys.executable, "-m", "paam.cli", "serve", "--socket", sock,
                             "--buckets", "2", "--device-cpu", "-2"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(sock):
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "paam serve did not create its socket"
            time.sleep(0.05)
        with paam.Client(priority=3, kernels=["vector_add"], socket=sock) as c:
            assert list(c.request("vector_add", [1.0, 2.0], [3.0, 4.0])) == [4.0, 6.0]
            assert c.buckets == 2
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()


_WITHOUT_ANNEX = ("import sys; sys.modules['paam_experiments'] = None; "  # import fails as if absent
                  "from paam.cli import main; sys.exit(main(sys.argv[1:]))")


def test_commands_other_than_eval_never_import_the_experiments_annex():
    out = subprocess.run([sys.executable, "-c", _WITHOUT_ANNEX, "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "eval" in out.stdout and "kernels" in out.stdout
    probe = ("import sys; from paam.cli import main; main(['kernels']); "
             "print('annex imported:', 'paam_experiments' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "annex imported: False" in out.stdout


def test_eval_without_the_annex_says_how_to_install_it():
    out = subprocess.run([sys.executable, "-c", _WITHOUT_ANNEX, "eval", "case-study-1"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "experiments annex is not installed" in out.stderr and "make install" in out.stderr


def test_a_reader_that_leaves_early_gets_no_traceback():
    # `paam analyze FILE --full | head -1`: the pipe closes while paam still writes
    proc = subprocess.Popen([sys.executable, "-m", "paam.cli", "analyze", "--full",
                             "python/paam/examples/case_study_1.yaml"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=__import__("pathlib").Path(__file__).resolve().parents[2])
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
