"""``paam ros-bench``: the reading of its helper processes' output, and the executor chain."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from paam.ros.bench import _wait_line


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-u", "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)


@pytest.fixture
def children():
    started = []

    def start(code):
        p = _child(code)
        started.append(p)
        return p
    yield start
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait(10)
        p.stdout.close()


def test_a_line_already_read_with_an_earlier_one_is_not_missed(children):
    # Both lines arrive in one write: reading the first pulls the second out of the pipe too,
    # where a later select() on the pipe cannot see it.
    # Missed, it would never be seen: the wait would end without it (SystemExit) when the child
    # ends its output, 60 s later.
    p = children("import sys, time; sys.stdout.write('starting\\nready\\n'); sys.stdout.flush(); "
                 "time.sleep(60)")
    assert _wait_line(p, "starting", 10) == "starting"
    assert _wait_line(p, "ready", 30) == "ready"


def test_a_line_split_across_reads_is_matched_whole(children):
    p = children("import sys, time; sys.stdout.write('paam bridge \\'b\\' rea'); "
                 "sys.stdout.flush(); time.sleep(0.3); sys.stdout.write('dy\\n'); "
                 "sys.stdout.flush(); time.sleep(30)")
    assert _wait_line(p, "ready", 10) == "paam bridge 'b' ready"


def test_the_child_never_blocks_on_a_full_pipe_after_its_ready_line(children):
    # After 'ready' the child writes far more than a pipe holds (64 KiB) and then exits; nobody
    # waits for more lines, so the pipe must still be drained.
    p = children("import sys; print('ready', flush=True); "
                 "[print('x' * 1000) for _ in range(2000)]; sys.stdout.flush()")
    _wait_line(p, "ready", 10)
    assert p.wait(timeout=20) == 0


def test_a_child_that_exits_without_the_line_fails_at_once_with_its_output(children):
    p = children("print('something else', flush=True)")
    # at its end of output ("ended its output"), not after the timeout ("did not within")
    with pytest.raises(SystemExit, match="ended its output.*something else"):
        _wait_line(p, "ready", 60)


def test_a_reader_keeps_to_its_own_pipe_after_its_descriptor_names_another(children):
    # The fixture closes a child's stdout while its reader thread may still be reading, and the
    # next test's pipe can get the same number: the old thread then stole the new child's first
    # line (CI, 2026-11-25). Here the number is made to name a new pipe at once (dup2), while
    # the child floods its own, so a thread reading by that number reads the new pipe's data.
    p = children("import sys\nwhile True: sys.stdout.write('x' * 100 + '\\n')")
    _wait_line(p, "x", 10)
    fd = p.stdout.fileno()
    r, w = os.pipe()
    os.dup2(r, fd)
    os.close(r)
    data = b"mine\n" * 2000  # 10 kB: fits in the pipe, so one write without a reader
    os.write(w, data)
    os.close(w)
    time.sleep(0.3)
    got = b""
    while chunk := os.read(fd, 65536):
        got += chunk
    assert got == data


def test_timeout(children):
    p = children("import time; print('hello', flush=True); time.sleep(30)")
    with pytest.raises(SystemExit, match="did not within"):
        _wait_line(p, "ready", 0.5)


def test_the_chain_bench_runs_every_hop_on_both_executors():
    """``paam ros-bench``'s chain part: each round must pass the message through every hop on
    each executor (it raises when a round does not finish), and report per-hop figures."""
    import argparse

    from paam.ros.bench import _executor_chain

    out = _executor_chain(argparse.Namespace(hops=3, rounds=5))
    assert set(out) == {"SingleThreadedExecutor", "PicasExecutor"}
    for kind, e in out.items():
        assert e["per_hop_wall_us"]["n"] == 5, kind
        # (the thread's CPU time within a round cannot exceed the round's wall time)
        assert 0 < e["per_hop_cpu_outside_us"]["p50"] <= e["per_hop_wall_us"]["p50"], kind
