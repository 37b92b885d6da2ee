"""scripts/device_long_run.sh, the GPU machine's runner of long sequences, driven here with a
stand-in for scripts/device_eval.sh (each step sleeps the seconds given as its arguments and
packs a file): `poll` returns once the named run has ended, `stop` ends a sequence at once and
lets another start."""
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "device_long_run.sh"

pytestmark = pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid")

STAND_IN = """#!/usr/bin/env bash
# setup when EXPERIMENTS is empty; else sleep the run's arguments' seconds and pack a file
set -eu
[ -z "${EXPERIMENTS:-}" ] && { echo "setup done"; exit 0; }
mkdir -p "$OUT"; echo "ran $EXPERIMENTS" > "$OUT/result.txt"
sleep $ARGS_fake
tar -czf "$TARBALL" -C "$OUT" result.txt
echo "finished"
"""


@pytest.fixture()
def env(tmp_path):
    stand_in = tmp_path / "eval.sh"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    e = dict(os.environ, LONG=str(tmp_path / "long"), OUT=str(tmp_path / "out"),
             EVAL=str(stand_in))
    yield e
    subprocess.run([str(SCRIPT), "stop"], env=e, capture_output=True, timeout=30)


def run(env, *args, timeout=60):
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def progress(env) -> str:
    return (Path(env["LONG"]) / "progress").read_text()


def test_poll_returns_when_the_named_run_ends_and_collects_it(env):
    r = run(env, "start", "a|fake|1", "b|fake|20")  # b outlasts poll's 5 s steps several times
    assert r.returncode == 0, r.stderr
    assert "setup done" in r.stdout and "device_long_run: started" in r.stdout
    r = run(env, "poll", "30", "a")
    assert r.returncode == 0, r.stderr
    # returned once a had ended: not after b (nor the 30 s, which b's 20 s end before)
    assert "a end" in progress(env) and "b end" not in progress(env)
    assert "all done" not in progress(env)
    with tarfile.open(Path(env["OUT"]) / "a.tgz") as t:
        assert t.extractfile("result.txt").read() == b"ran fake\n"
    assert not (Path(env["OUT"]) / "b.tgz").exists()
    r = run(env, "poll", "30")
    assert r.returncode == 0 and "all done" in progress(env)
    assert (Path(env["OUT"]) / "b.tgz").exists() and (Path(env["OUT"]) / "logs.tgz").exists()


def test_stop_ends_the_sequence_and_another_may_start(env):
    assert run(env, "start", "long|fake|120", "never|fake|1").returncode == 0
    r = run(env, "start", "x|fake|1")
    assert r.returncode == 1 and "already going" in r.stderr
    r = run(env, "stop")   # (within run's 60 s: long's 120 s are not waited for)
    assert r.returncode == 0, r.stderr
    text = progress(env)
    assert "stopped" in text and "long end" not in text and "never start" not in text
    pid = int((Path(env["LONG"]) / "runner.pid").read_text())
    deadline = time.monotonic() + 10    # killed: gone once the kernel has reaped it
    while time.monotonic() < deadline and _group_alive(pid):
        time.sleep(0.05)
    with pytest.raises(ProcessLookupError):     # the runner's group is gone
        os.killpg(pid, 0)
    assert run(env, "start", "x|fake|0").returncode == 0
    assert run(env, "poll", "30").returncode == 0
    assert (Path(env["OUT"]) / "x.tgz").exists()


def test_poll_refuses_a_label_not_in_the_plan(env):
    assert run(env, "start", "a|fake|0").returncode == 0
    r = run(env, "poll", "5", "nope")
    assert r.returncode == 2 and "no run labelled 'nope'" in r.stderr
