"""``paam eval edf`` on the CPU backend: who goes first where requests queue together (fixed
priority in one order every time, EDF by deadline), the misses that fixed priority cannot avoid
(lower bounds: a spin's device time is CPU time, never less on a busy machine), and the CPU
fallback's flags. Orders and counts only: the run's timing is the report's, not the test's."""
import argparse

import pytest

import paam
from paam_experiments import edf

SCALE = 2.0


@pytest.fixture(scope="module")
def edf_runs():
    _, _, modes = edf.SETS["edf"]
    return {m.label: edf.run_mode("edf", m, "cpu", SCALE, hyperperiods=2, device_cpu=-2) for m in modes}


def _pairs(jobs, blocker):
    """The orders of the jobs that queued together behind a job of ``blocker``: ["B0", "A0"]."""
    found = [order for b, order in edf.queued_pairs(jobs) if b.startswith(blocker)]
    assert found, f"no job queued behind {blocker} (the machine delayed every release past it)"
    return found


def _first(order):
    return order[0][0]  # "B0" -> "B"


def test_fixed_priority_serves_every_pair_in_one_order_and_misses(edf_runs):
    by_job = {label: {(j.chain, j.job): j for j in jobs} for label, jobs in edf_runs.items()}
    for label, high, low in (("fifo A>B", "A", "B"), ("fifo B>A", "B", "A")):
        jobs = edf_runs[label]
        for blocker in ("Y", "X"):
            for order in _pairs(jobs, blocker):
                assert _first(order) == high, (label, blocker, order)
    # A above B: B misses behind Y; B above A: A misses behind X (the module docstring's bounds)
    for label, blocker, victim in (("fifo A>B", "Y", "B"), ("fifo B>A", "X", "A")):
        for order in _pairs(edf_runs[label], blocker):
            name = next(n for n in order if n[0] == victim)
            assert by_job[label][(victim, int(name[1:]))].missed, (label, order)


def test_edf_serves_each_pair_by_deadline(edf_runs):
    jobs = edf_runs["edf"]
    for order in _pairs(jobs, "Y"):
        assert _first(order) == "B", order  # 40 against 82 (x2)
    for order in _pairs(jobs, "X"):
        assert _first(order) == "A", order  # 182 against 190 (x2)
    assert not any(j.error for j in jobs)
    assert all(j.ran_on == "cpu" and not j.fallback for j in jobs)


def test_the_fallback_moves_the_urgent_chain_off_the_held_device():
    _, _, (off, on) = edf.SETS["fallback"]
    jobs_off = edf.run_mode("fallback", off, "cpu", SCALE, hyperperiods=3, device_cpu=-2)
    jobs_on = edf.run_mode("fallback", on, "cpu", SCALE, hyperperiods=3, device_cpu=-2)
    u_off = [j for j in jobs_off if j.chain == "U"]
    l_off = [j for j in jobs_off if j.chain == "L"]
    assert not any(j.fallback for j in jobs_off)
    for u in u_off:  # behind L on the device: at least 120 + 10 - 20 ms > 40 ms
        if any(l.device_start < u.dequeued < l.device_end for l in l_off):
            assert u.missed and u.device_start >= min(l.device_end for l in l_off), u
    u_on = [j for j in jobs_on if j.chain == "U"]
    assert not u_on[0].fallback  # no device time measured yet: it stays, and misses
    moved = [j for j in u_on if j.fallback]
    assert moved, "no job of U ran its CPU version"
    assert all(j.ran_on == "cpu" for j in moved)
    assert not any(j.fallback for j in jobs_on if j.chain == "L")  # no deadline: it stays


def test_the_command_line_checks_its_sets(tmp_path):
    p = argparse.ArgumentParser()
    edf.add_arguments(p)
    with pytest.raises(SystemExit, match="--sets: unknown rms"):
        edf.run(p.parse_args(["--sets", "rms", "--out", str(tmp_path)]))
    with pytest.raises(SystemExit, match="--scale must be positive"):
        edf.run(p.parse_args(["--scale", "0", "--out", str(tmp_path)]))


def _cuda_available() -> bool:
    try:
        c = paam.Client(priority=1, kernels=["spin"], direct=True, direct_backend="cuda")
    except paam.PaamError:
        return False
    c.close()
    return True


@pytest.mark.skipif(not _cuda_available(), reason="no CUDA GPU, or paam built without CUDA")
def test_on_a_gpu_the_urgent_chain_meets_its_deadline_only_thanks_to_the_fallback():
    """The GPU demonstration: L holds the GPU's one bucket, U (deadline 40 ms at x2) arrives
    behind it. Without the fallback every such job of U misses; with it, U's CPU version runs
    once the bucket's device time is known, and those jobs meet the deadline."""
    _, _, (off, on) = edf.SETS["fallback"]
    jobs_off = edf.run_mode("fallback", off, "cuda", SCALE, hyperperiods=10)
    jobs_on = edf.run_mode("fallback", on, "cuda", SCALE, hyperperiods=10)
    u_off = [j for j in jobs_off if j.chain == "U"]
    assert all(j.ran_on == "cuda" and not j.fallback for j in jobs_off)
    assert sum(j.missed for j in u_off) >= len(u_off) - 1, [j.response_ms for j in u_off]
    moved = [j for j in jobs_on if j.chain == "U" and j.fallback]
    assert len(moved) >= 8, "U's CPU version ran in fewer than 8 of its 10 jobs"
    assert all(j.ran_on == "cpu" for j in moved)
    met = [j for j in moved if not j.missed]
    assert len(met) >= len(moved) - 1, [j.response_ms for j in moved]
    assert all(j.ran_on == "cuda" for j in jobs_on if j.chain == "L")
