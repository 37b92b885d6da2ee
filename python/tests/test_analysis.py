"""The analysis from Python: YAML checking, bounds of the paper's case study, plan, the CLI."""
from __future__ import annotations

import argparse
import csv
import inspect
import json
import math
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from paam.analysis import InputError, analyze, load_system, options_for, parse_system, plan
from paam.analysis import cli as analysis_cli

CASE_STUDY_1 = """\
    # The PAAM paper's case study 1 (../shared/examples/case_study_1.yaml), kept here so the
    # test does not depend on files outside the repository.
    accelerators:
      gpu0: {buckets: 6, overhead: 0.391, preemption: 0.130}
    executors:
      ex1: {cpu: 2, priority: 90, wait: suspend}
      ex2: {cpu: 3, priority: 89, wait: suspend}
      ex3: {cpu: 4, priority: 88, wait: suspend}
      ex4: {cpu: 5, priority: 87, wait: suspend}
      ex5: {cpu: 6, priority: 86, wait: suspend}
      ex6: {cpu: 7, priority: 85, wait: suspend}
      be1: {cpu: 2, priority: 70, wait: suspend}
      be2: {cpu: 3, priority: 69, wait: suspend}
    comm_cost: 0
    chains:
      - name: chain1
        priority: 8
        period: 120
        callbacks:
          - {name: c1_1, executor: ex1, wcet: 2, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c1_2, executor: ex1, wcet: 6, segments: [{accelerator: gpu0, wcet: 10}]}
      - name: chain2
        priority: 7
        period: 120
        callbacks:
          - {name: c2_1, executor: ex2, wcet: 2, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c2_2, executor: ex2, wcet: 8, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c2_3, executor: ex2, wcet: 9, segments: [{accelerator: gpu0, wcet: 10}]}
      - name: chain3
        priority: 6
        period: 220
        callbacks:
          - {name: c3_1, executor: ex3, wcet: 6, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c3_2, executor: ex3, wcet: 8, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c3_3, executor: ex3, wcet: 4, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c3_4, executor: ex3, wcet: 8, segments: [{accelerator: gpu0, wcet: 10}]}
      - name: chain4
        priority: 5
        period: 260
        callbacks:
          - {name: c4_1, executor: ex4, wcet: 5, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c4_2, executor: ex4, wcet: 7, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c4_3, executor: ex4, wcet: 2, segments: [{accelerator: gpu0, wcet: 10}]}
      - name: chain5
        priority: 4
        period: 360
        callbacks:
          - {name: c5_1, executor: ex5, wcet: 2, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c5_2, executor: ex5, wcet: 1, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c5_3, executor: ex5, wcet: 7, segments: [{accelerator: gpu0, wcet: 10}]}
      - name: chain6
        priority: 3
        period: 400
        callbacks:
          - {name: c6_1, executor: ex6, wcet: 2, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: c6_2, executor: ex6, wcet: 7, segments: [{accelerator: gpu0, wcet: 10}]}
      - name: be1
        priority: 2
        period: 120
        best_effort: true
        callbacks:
          - {name: be1_1, executor: be1, wcet: 2, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: be1_2, executor: be1, wcet: 6, segments: [{accelerator: gpu0, wcet: 10}]}
      - name: be2
        priority: 1
        period: 220
        best_effort: true
        callbacks:
          - {name: be2_1, executor: be2, wcet: 6, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: be2_2, executor: be2, wcet: 8, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: be2_3, executor: be2, wcet: 4, segments: [{accelerator: gpu0, wcet: 10}]}
          - {name: be2_4, executor: be2, wcet: 8, segments: [{accelerator: gpu0, wcet: 10}]}
"""


def run_cli(*argv: str) -> int:
    """Run one of this package's sub-commands (without the rest of the paam CLI)."""
    parser = argparse.ArgumentParser(prog="paam")
    analysis_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(list(argv))
    return args.func(args)


def write(tmp_path: Path, text: str, name: str = "system.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


SMALL = """\
    accelerators:
      gpu0: {buckets: 1, overhead: 0.5, preemption: 0}
    executors:
      hi: {cpu: 0, priority: 95, wait: WAIT}
      lo: {cpu: 0, priority: 90}
    chains:
      - name: P
        priority: 2
        period: 20
        callbacks:
          - {name: p1, executor: hi, wcet: 2, segments: [{accelerator: gpu0, wcet: 3}]}
      - name: Q
        priority: 1
        period: 100
        deadline: DEADLINE
        callbacks:
          - {name: q1, executor: lo, wcet: 10}
"""


def small(tmp_path: Path, wait: str = "suspend", deadline: float = 100) -> Path:
    return write(tmp_path, SMALL.replace("WAIT", wait).replace("DEADLINE", str(deadline)))


# --------------------------------------------------------------------------------------------
# Bounds

@pytest.fixture
def case_study(tmp_path) -> Path:
    return write(tmp_path, CASE_STUDY_1, "case_study_1.yaml")


def test_case_study_bounds_match_the_hand_computation(case_study):
    result = analyze(load_system(case_study))
    # n = 6 buckets for N = 8 chains: floor(rank*6/8) puts chain1 and chain2 in bucket 0.
    # A* = 10 + 2*0.13 = 10.26. chain1: each segment blocked by chain2's 10.26, no hps:
    #   H = 2 * 20.52 = 41.04, H* = 41.04 + 2*0.391 = 41.822, R = 8 + 41.822 = 49.822.
    assert result.chain("chain1").wcrt == pytest.approx(49.822, abs=1e-9)
    # chain2: no blocking (chain3 is in bucket 1); Lemma 3: 3*10.26 + (ceil(R/120)+1)*20.52
    #   = 71.82 (Lemma 2 would give 3 * (10.26 + 2*20.52) = 153.9); H* = 71.82 + 3*0.391
    #   = 72.993; R = 19 + 72.993 = 91.993.
    chain2 = result.chain("chain2")
    assert chain2.wcrt == pytest.approx(91.993, abs=1e-9)
    assert chain2.subchains[0].handling_per_segment == pytest.approx(153.9, abs=1e-9)
    # chain3: 26 + 4*10.26 + (2+1)*20.52 + (2+1)*30.78 + 4*0.391 = 222.504 > 220.
    chain3 = result.chain("chain3")
    assert not chain3.schedulable
    assert chain3.wcrt == pytest.approx(222.504, abs=1e-9)
    assert not result.schedulable


def case_study_data() -> dict:
    return yaml.safe_load(textwrap.dedent(CASE_STUDY_1))


def test_case_study_best_effort_chains_cost_the_critical_chains_nothing():
    # be1 and be2 have the lowest chain priorities (never in a critical segment's hps), their
    # own buckets 4 and 5 (no critical chain is in them, so they block nobody; the critical
    # segments pay only the 2*kappa in A*, which every segment pays when n > 1) and executors
    # below the critical ones on CPUs 2 and 3 (not in any hpp). So however much GPU time they
    # take, no critical bound moves; the eight chains' GPU demand above 1 is no critical
    # chain's problem (only be2's bound is infinite).
    data = case_study_data()
    before = analyze(parse_system(data), stop_at_deadline=False)
    for ch in data["chains"]:
        if ch.get("best_effort"):
            for cb in ch["callbacks"]:
                cb["wcet"] = 50
                cb["segments"] = [{"accelerator": "gpu0", "wcet": 100}] * 3
    after = analyze(parse_system(data), stop_at_deadline=False)
    for b in before.chains:
        if not b.best_effort:
            assert after.chain(b.name).wcrt == pytest.approx(b.wcrt, abs=1e-9), b.name


def test_best_effort_buckets_are_the_lowest_ones_without_an_analysed_chain():
    from paam.analysis.bounds import best_effort_buckets

    data = case_study_data()
    # rule R2 over eight chains in six buckets: be1 alone in bucket 4, be2 in 5
    assert best_effort_buckets(parse_system(data)) == {"gpu0": 2}
    # be1 above chain6: chain6 now shares bucket 4 with nothing best-effort below it but be2
    by_name = {ch["name"]: ch for ch in data["chains"]}
    by_name["be1"]["priority"], by_name["chain6"]["priority"] = 3, 2
    assert best_effort_buckets(parse_system(data)) == {"gpu0": 1}
    # no best-effort chain at all: every bucket holds an analysed chain
    data["chains"] = [ch for ch in data["chains"] if not ch.get("best_effort")]
    assert best_effort_buckets(parse_system(data)) == {"gpu0": 0}
    # two critical chains in six buckets: ranks 0 and 1 go to buckets 0 and 3, so 4 and 5 hold
    # no chain at all and count as well
    data["chains"] = data["chains"][:2]
    assert best_effort_buckets(parse_system(data)) == {"gpu0": 2}


def test_case_study_with_the_paper_authors_inputs_still_misses_chain4():
    # The inputs of the authors' analysis script for Fig. 9 (see docs/analysis.md): epsilon =
    # kappa = 0, and both best-effort chains in the lowest bucket, below chains 3..6 in buckets
    # 1..4 (chains 1 and 2 share bucket 0). Best-effort chains in a bucket of their own below
    # all critical ones change no critical bound (test above), so the six critical chains alone
    # with n = 5 give that map: floor(r*5/6) = 0,0,1,2,3,4.
    data = case_study_data()
    data["accelerators"]["gpu0"] = {"buckets": 5, "overhead": 0, "preemption": 0}
    data["chains"] = [ch for ch in data["chains"] if not ch.get("best_effort")]
    result = analyze(parse_system(data), stop_at_deadline=False)
    # A* = 10. chain3 (E = 26, 4 segments, hps: chain1 20 + chain2 30 per 120 ms):
    #   R0 = 26: H^chain = 40 + (ceil(26/120)+1)*50 = 140 -> R = 166 (the script's value);
    #   H^chain(166) = 40 + 3*50 = 190 -> R = 216; H^chain(216) = 190 -> R = 216 <= 220.
    chain3 = result.chain("chain3")
    assert chain3.wcrt == pytest.approx(216.0, abs=1e-9)
    assert chain3.schedulable
    # chain4 (E = 14, 3 segments, hps: 50 per 120 ms, chain3's 40 per 220 ms):
    #   R0 = 14: H^chain = 30 + 2*50 + 2*40 = 210 -> R = 224 (the script's value, < 260);
    #   H^chain(224) = 30 + 3*50 + 3*40 = 300 -> R = 314; H^chain(314) = 30 + 4*50 + 3*40
    #   = 350 -> R = 364; H^chain(364) = 30 + 5*50 + 3*40 = 400 -> R = 414; H^chain(414) =
    #   400: fixed point 414 > 260. (Lemma 2: 3 * 330 = 990 per chain job, not the minimum.)
    chain4 = result.chain("chain4")
    assert chain4.wcrt == pytest.approx(414.0, abs=1e-9)
    assert chain4.subchains[0].handling_per_chain == pytest.approx(400.0, abs=1e-9)
    assert chain4.subchains[0].handling_per_segment == pytest.approx(990.0, abs=1e-9)
    assert not chain4.schedulable


def test_spin_charges_more_than_suspend(tmp_path):
    # Q is below P's executor on CPU 0. Suspend: 10 + 2*(2 + 0.5) = 15.
    # Spin: P's H* = 3.5 per job: 10 -> 21 -> 26.5 -> 26.5.
    suspend = analyze(load_system(small(tmp_path, "suspend"))).chain("Q").wcrt
    spin = analyze(load_system(small(tmp_path, "spin"))).chain("Q").wcrt
    hybrid = analyze(load_system(small(tmp_path, "hybrid"))).chain("Q").wcrt
    assert suspend == pytest.approx(15.0)
    assert spin == pytest.approx(26.5)
    assert hybrid == spin  # hybrid waiting is analysed as spinning


def test_json_turns_an_unbounded_time_into_null(tmp_path):
    path = write(tmp_path, """\
        accelerators: {gpu0: {}}
        executors: {a: {cpu: 0, priority: 1}, b: {cpu: 1, priority: 1}}
        chains:
          - {name: hog, priority: 2, period: 10, callbacks: [{executor: a, wcet: 0, segments: [{accelerator: gpu0, wcet: 10}]}]}
          - {name: victim, priority: 1, period: 100, callbacks: [{executor: b, wcet: 1, segments: [{accelerator: gpu0, wcet: 1}]}]}
        """)
    data = analyze(load_system(path), stop_at_deadline=False).to_json()
    victim = next(c for c in data["chains"] if c["name"] == "victim")
    assert victim["wcrt"] is None and victim["schedulable"] is False
    json.dumps(data, allow_nan=False)  # strictly valid JSON


# --------------------------------------------------------------------------------------------
# Input checking: the message names the chain and the field

@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["chains"][1]["callbacks"][0].update(executor="nope"),
     ["chain 'Q'", "callback 'q1'", "'executor'", "unknown executor 'nope'"]),
    (lambda d: d["chains"][0]["callbacks"][0]["segments"][0].update(accelerator="tpu"),
     ["chain 'P'", "callback 'p1'", "'accelerator'", "unknown accelerator 'tpu'"]),
    (lambda d: d["chains"][1].update(priority=2),
     ["chain 'Q'", "'priority'", "already used by chain 'P'"]),
    (lambda d: d["chains"][1].update(deadline=150),
     ["chain 'Q'", "'deadline'", "above the period"]),
    (lambda d: d["chains"][0]["callbacks"][0].update(wcet=-1),
     ["chain 'P'", "callback 'p1'", "'wcet'", "negative"]),
    (lambda d: d["chains"][0].update(perod=20),
     ["chain 'P'", "unknown field", "'perod'"]),
    (lambda d: d["chains"][0].update(period="fast"),
     ["chain 'P'", "'period'", "must be a number"]),
    (lambda d: d["executors"]["lo"].update(priority=95),
     ["executor 'lo'", "'priority'", "already used by executor 'hi'"]),
    (lambda d: d["accelerators"]["gpu0"].update(buckets=0),
     ["accelerator 'gpu0'", "'buckets'"]),
    (lambda d: d.update(description=["not", "text"]),
     ["system description", "'description'", "must be text"]),
])
def test_bad_input_names_the_chain_and_the_field(tmp_path, edit, expected):
    _assert_refused(small(tmp_path), edit, expected)


def _assert_refused(path, edit, expected) -> tuple[dict, str]:
    """``edit`` applied to the system at ``path`` is bad input whose message holds every
    fragment of ``expected``; returns the edited data and the message."""
    data = yaml.safe_load(path.read_text())
    edit(data)
    with pytest.raises(InputError) as err:
        parse_system(data)
    for fragment in expected:
        assert fragment in str(err.value)
    return data, str(err.value)


def test_optional_fields_default_sensibly(tmp_path):
    spec = load_system(small(tmp_path))
    q = next(c for c in spec.chains if c.name == "Q")
    assert q.effective_deadline == 100 and not q.best_effort
    assert spec.comm_cost == 0 and spec.executors["lo"].wait == "suspend"


INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["chains"][0].update(priority=2**70),
     ["chain 'P'", "'priority'", str(2**70), "out of range", str(INT64_MAX)]),
    (lambda d: d["chains"][1].update(priority=INT64_MAX + 1),
     ["chain 'Q'", "'priority'", "out of range"]),
    (lambda d: d["chains"][1].update(priority=-INT64_MAX - 2),
     ["chain 'Q'", "'priority'", "out of range"]),
    (lambda d: d["chains"][0]["callbacks"][0].update(priority=2**70),
     ["chain 'P'", "callback 'p1'", "'priority'", "out of range"]),
    (lambda d: d["executors"]["lo"].update(priority=INT32_MAX + 1),
     ["executor 'lo'", "'priority'", "out of range", str(INT32_MAX)]),
    (lambda d: d["executors"]["hi"].update(priority=-2**31 - 1),
     ["executor 'hi'", "'priority'", "out of range"]),
    (lambda d: d["executors"]["hi"].update(cpu=2**40),
     ["executor 'hi'", "'cpu'", "out of range"]),
    (lambda d: d["accelerators"]["gpu0"].update(buckets=2**63),
     ["accelerator 'gpu0'", "'buckets'", "out of range", str(INT32_MAX)]),
    (lambda d: d["chains"][0].update(period=10**400),  # too large for a double
     ["chain 'P'", "'period'", "finite"]),
])
def test_out_of_range_integers_are_bad_input_not_a_crash(tmp_path, capsys, edit, expected):
    data, message = _assert_refused(small(tmp_path), edit, expected)
    # From the command line: exit 2 and the same message, for analyze and for plan.
    path = write(tmp_path, yaml.safe_dump(data), "big.yaml")
    for argv in (("analyze", str(path)), ("plan", str(path), "-o", str(tmp_path / "o.yaml"))):
        assert run_cli(*argv) == 2
        captured = capsys.readouterr()
        assert message in captured.err and "Traceback" not in captured.err
    assert not (tmp_path / "o.yaml").exists()


def test_integers_at_the_limits_of_their_ranges_are_analysed(tmp_path):
    data = yaml.safe_load(small(tmp_path).read_text())
    data["chains"][0]["priority"] = INT64_MAX
    data["chains"][1]["priority"] = -INT64_MAX - 1
    data["executors"]["hi"].update(priority=INT32_MAX, cpu=INT32_MAX)
    data["executors"]["lo"].update(priority=-2**31, cpu=INT32_MAX)
    data["accelerators"]["gpu0"]["buckets"] = INT32_MAX
    result = analyze(parse_system(data))
    assert result.schedulable
    assert result.chain("P").priority == INT64_MAX


# --------------------------------------------------------------------------------------------
# Command line

def test_analyze_exit_status_and_json(tmp_path, capsys):
    assert run_cli("analyze", str(small(tmp_path))) == 0
    table = capsys.readouterr().out
    assert "bound" in table and "interference" in table and "schedulable" in table
    assert run_cli("analyze", "--json", str(small(tmp_path, deadline=14))) == 1
    data = json.loads(capsys.readouterr().out)
    q = next(c for c in data["chains"] if c["name"] == "Q")
    assert set(["name", "wcrt", "deadline", "schedulable"]) <= set(q)
    assert q["schedulable"] is False and data["schedulable"] is False
    assert run_cli("analyze", str(tmp_path / "missing.yaml")) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = write(tmp_path, "chains: [{name: x, priority: 1, period: -5, callbacks: []}]\n", "bad.yaml")
    assert run_cli("analyze", str(bad)) == 2
    assert "chain 'x'" in capsys.readouterr().err


def test_analyze_with_edf_inside_a_bucket_gives_no_bound_and_exit_3(tmp_path, capsys):
    assert run_cli("analyze", "--queue", "edf", str(small(tmp_path))) == 3
    out = capsys.readouterr().out
    assert out.startswith("2 chain(s): ")
    assert "gives no bound for EDF inside a bucket" in out and "bound" not in out.split("\n")[0]
    assert run_cli("analyze", "--queue", "edf", "--json", str(small(tmp_path))) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["covered"] is False and data["schedulable"] is None and data["queue"] == "edf"
    assert "wcrt" not in json.dumps(data)
    # the file is still checked: bad input stays exit 2
    bad = write(tmp_path, "chains: [{name: x, priority: 1, period: -5, callbacks: []}]\n", "bad.yaml")
    assert run_cli("analyze", "--queue", "edf", str(bad)) == 2
    assert "chain 'x'" in capsys.readouterr().err
    assert run_cli("analyze", "--queue", "fifo", str(small(tmp_path))) == 0


def test_case_study_is_reported_unschedulable_with_exit_1(case_study, capsys):
    assert run_cli("analyze", str(case_study)) == 1
    assert "chain 'chain3' misses its deadline 220.000 ms" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Planning

PLAN_INPUT = """\
    # Everything crammed onto one executor: B and C miss (with units: 126.5 and 392.1 ms).
    accelerators:
      gpu0: {buckets: 2, overhead: 0.05, preemption: 0.1, type: gpu}
      gpu1: {buckets: 2, overhead: 0.05, preemption: 0.1, type: gpu}
    executors:
      only: {cpu: 0, priority: 50}
    plan: {cpus: [0, 1], executor_priority: 80}
    chains:
      - name: A
        priority: 3
        period: 50
        callbacks:
          - {name: a1, executor: only, wcet: 10, segments: [{accelerator: GPU_A, wcet: 2}]}
          - {name: a2, executor: only, wcet: 10, segments: [{accelerator: GPU_A, wcet: 2}]}
      - name: B
        priority: 2
        period: 50
        callbacks:
          - {name: b1, executor: only, wcet: 5, segments: [{accelerator: GPU_B, wcet: 1.5}]}
          - {name: b2, executor: only, wcet: 5, segments: [{accelerator: GPU_B, wcet: 1.5}]}
      - name: C
        priority: 1
        period: 100
        callbacks:
          - {name: c1, executor: only, wcet: 15, segments: [{accelerator: GPU_C, wcet: 1}]}
          - {name: c2, executor: only, wcet: 15, segments: [{accelerator: GPU_C, wcet: 1}]}
"""


def plan_input(tmp_path: Path, *, units: bool = False) -> Path:
    """The planning example; segments name the type 'gpu', or (units=True) fixed units."""
    text = PLAN_INPUT
    for chain, unit in (("A", "gpu0"), ("B", "gpu1"), ("C", "gpu0")):
        text = text.replace(f"GPU_{chain}", unit if units else "gpu")
    return write(tmp_path, text, "units.yaml" if units else "types.yaml")


def test_plan_assigns_priorities_units_and_executors_and_becomes_schedulable(tmp_path):
    spec = load_system(plan_input(tmp_path), for_planning=True)
    planned = plan(spec, options_for(spec))
    cbs = {cb.name: cb for c in planned.chains for cb in c.callbacks}
    # Algorithm 1: ascending chain priority C, B, A; callbacks in chain order.
    assert [cbs[n].priority for n in ("c1", "c2", "b1", "b2", "a1", "a2")] == [1, 2, 3, 4, 5, 6]
    # WFD on A/T: a1 .04 -> gpu0, a2 .04 -> gpu1, b1 .03 -> gpu0, b2 -> gpu1, c1 .01 -> gpu0 ...
    units = [cbs[n].segments[0].accelerator for n in ("a1", "a2", "b1", "b2", "c1", "c2")]
    assert units == ["gpu0", "gpu1", "gpu0", "gpu1", "gpu0", "gpu1"]
    # Only the requested CPUs; on each CPU the executor of the more critical chain ranks higher.
    assert {e.cpu for e in planned.executors.values()} <= {0, 1}
    top = {}
    for chain in planned.chains:
        for cb in chain.callbacks:
            top[cb.executor] = max(top.get(cb.executor, -1), chain.priority)
    for a in planned.executors.values():
        for b in planned.executors.values():
            if a.cpu == b.cpu and top[a.name] > top[b.name]:
                assert a.priority > b.priority
    assert max(e.priority for e in planned.executors.values()) == 80
    # A chain whose callbacks fit stays on one executor.
    assert len({cb.executor for cb in next(c for c in planned.chains if c.name == "A").callbacks}) == 1
    assert analyze(planned).schedulable


def test_plan_cli_reports_before_and_after_and_writes_a_file_analyze_accepts(tmp_path, capsys):
    src = plan_input(tmp_path, units=True)
    assert run_cli("analyze", str(src)) == 1  # all on one executor: C misses
    capsys.readouterr()
    out = tmp_path / "planned.yaml"
    assert run_cli("plan", str(src), "-o", str(out)) == 0
    report = capsys.readouterr().out
    row_c = next(line for line in report.splitlines() if line.startswith("C "))
    assert "MISS" in row_c and row_c.rstrip().endswith("ok")  # before: MISS, after: ok
    assert run_cli("analyze", str(out)) == 0
    # Segments naming a type: no bounds before (no units yet), the plan picks them.
    assert run_cli("plan", str(plan_input(tmp_path)), "-o", str(tmp_path / "t.yaml")) == 0
    assert "not analysable" in capsys.readouterr().out
    # Without executors at all, planning still works.
    data = yaml.safe_load(plan_input(tmp_path).read_text())
    for chain in data["chains"]:
        for cb in chain["callbacks"]:
            del cb["executor"]
    data["executors"] = {}
    bare = write(tmp_path, yaml.safe_dump(data), "bare.yaml")
    assert run_cli("plan", str(bare), "-o", str(tmp_path / "bare.out.yaml")) == 0
    assert run_cli("plan", str(bare), "--cpus", "x,y") == 2


def test_plan_to_a_missing_directory_is_bad_input_with_a_clear_message(tmp_path, capsys):
    out = tmp_path / "nonexistent" / "dir" / "out.yaml"
    assert run_cli("plan", str(plan_input(tmp_path, units=True)), "-o", str(out)) == 2
    err = capsys.readouterr().err
    assert f"{out}: cannot write the planned system" in err and "Traceback" not in err
    assert not out.exists()


def test_plan_options_out_of_range_are_bad_input(tmp_path, capsys):
    src = plan_input(tmp_path, units=True)
    out = str(tmp_path / "o.yaml")
    assert run_cli("plan", str(src), "-o", out, "--executor-priority", str(2**40)) == 2
    assert "--executor-priority: 1099511627776 is out of range" in capsys.readouterr().err
    # The planner counts down from it: room for one executor per callback (six here).
    assert run_cli("plan", str(src), "-o", out, "--executor-priority", str(-2**31)) == 2
    assert "--executor-priority" in capsys.readouterr().err
    assert run_cli("plan", str(src), "-o", out, "--cpus", f"0,{2**40}") == 2
    assert "--cpus: 1099511627776 is out of range" in capsys.readouterr().err
    data = yaml.safe_load(src.read_text())
    data["plan"]["executor_priority"] = 2**63
    big = write(tmp_path, yaml.safe_dump(data), "big_plan.yaml")
    assert run_cli("plan", str(big), "-o", out) == 2
    assert "plan: field 'executor_priority'" in capsys.readouterr().err
    assert not (tmp_path / "o.yaml").exists()


def test_plan_never_makes_the_case_study_worse_for_critical_chains(case_study):
    spec = load_system(case_study)
    before = analyze(spec, stop_at_deadline=False)
    after = analyze(plan(spec, options_for(spec, [2, 3, 4, 5, 6, 7])), stop_at_deadline=False)
    for b in before.chains:
        if not b.best_effort:
            assert after.chain(b.name).wcrt <= b.wcrt + 1e-9


# --------------------------------------------------------------------------------------------
# The schedulability study, scaled down

def test_experiment_quick_writes_csv_and_png(tmp_path, capsys):
    out = tmp_path / "sched"
    assert run_cli("experiment", "schedulability", "--quick", "--sets", "5", "--no-progress",
                   "--out", str(out)) == 0
    rows = list(csv.DictReader((out / "fig14a_chains.csv").open()))
    assert [r["x"] for r in rows] == ["2", "10", "18"]
    assert all(int(r["sets"]) == 5 for r in rows)
    for r in rows:
        f = float(r["fraction"])
        # The PAAM bound takes the minimum: never fewer schedulable sets than either lemma.
        assert f >= float(r["fraction_lemma2_only"]) and f >= float(r["fraction_lemma3_only"])
    ratios = list(csv.DictReader((out / "fig14b_ratio.csv").open()))
    assert [r["x"] for r in ratios] == ["1:9", "5:5", "7:3"]
    png = (out / "fig14_schedulability.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    params = json.loads((out / "params.json").read_text())
    assert params["config"]["sets"] == 5


def test_experiment_is_reproducible_and_fewer_chains_are_easier():
    from paam.analysis import study
    config = study.StudyConfig(sets=40, chains=[2, 20], ratios=[(1, 9)], jobs=2)
    first = study.run(config)
    second = study.run(study.StudyConfig(sets=40, chains=[2, 20], ratios=[(1, 9)], jobs=1,
                                         batch=7))
    assert [p.schedulable for p in first] == [p.schedulable for p in second]
    two, twenty = first[0], first[1]
    assert two.fraction() > twenty.fraction()
    assert not math.isnan(two.fraction())


def test_plan_of_an_infeasible_chain_tries_a_split_and_still_writes_a_valid_file(tmp_path):
    # S needs 120 ms of CPU every 100 ms: no placement, whole or split, can make it.
    src = write(tmp_path, """\
        executors: {e: {cpu: 0, priority: 10}}
        chains:
          - name: S
            priority: 1
            period: 100
            callbacks: [{name: s1, executor: e, wcet: 60}, {name: s2, executor: e, wcet: 60}]
        """)
    out = tmp_path / "s.yaml"
    assert run_cli("plan", str(src), "--cpus", "0,1", "-o", str(out)) == 1
    assert run_cli("analyze", str(out)) == 1
    spec = load_system(out)
    assert all(cb.executor in spec.executors for cb in spec.chains[0].callbacks)


def test_blocking_by_callback_charges_a_lower_callbacks_accelerator_requests(tmp_path, capsys):
    # H and L share executor e; L's callback holds it through its 10 ms GPU request.
    path = write(tmp_path, """\
        accelerators: {gpu0: {buckets: 1, overhead: 0.5}}
        executors: {e: {cpu: 0, priority: 90}}
        chains:
          - {name: H, priority: 2, period: 100,
             callbacks: [{name: h1, executor: e, wcet: 1}]}
          - {name: L, priority: 1, period: 200,
             callbacks: [{name: l1, executor: e, wcet: 2,
                          segments: [{accelerator: gpu0, wcet: 10}]}]}
        """, "shared.yaml")
    spec = load_system(path)
    # ANALYSIS.md as written: B_H = L's CPU WCET 2, R_H = 3.
    assert analyze(spec).chain("H").wcrt == pytest.approx(3.0)
    # Callback: B_H = 2 + 10 (nothing above L on gpu0 but H, which has no segment) + 0.5.
    h = analyze(spec, blocking="callback").chain("H")
    assert h.blocking == pytest.approx(12.5) and h.wcrt == pytest.approx(13.5)
    assert analyze(spec, blocking="callback").chain("L").wcrt == pytest.approx(
        analyze(spec).chain("L").wcrt)
    with pytest.raises(InputError, match="blocking"):
        analyze(spec, blocking="segments")
    # The command line: a deadline of 10 passes as written and fails with --blocking callback.
    data = yaml.safe_load(path.read_text())
    data["chains"][0]["deadline"] = 10
    tight = write(tmp_path, yaml.safe_dump(data), "tight.yaml")
    assert run_cli("analyze", str(tight)) == 0
    assert run_cli("analyze", "--blocking", "callback", str(tight)) == 1
    capsys.readouterr()


# --------------------------------------------------------------------------------------------
# The shipped example systems and the TimingModel example

def test_the_shipped_robot_example_is_schedulable_and_says_so_first(capsys):
    from paam import examples
    assert run_cli("analyze", str(examples.path("mobile_robot"))) == 0
    description, table = capsys.readouterr().out.split("\nchain ", 1)
    assert description.startswith("A small mobile robot with one GPU")
    assert "Expected: schedulable" in " ".join(description.split())
    assert "schedulable: all 4 critical chains meet their deadlines" in table
    spec = load_system(examples.path("mobile_robot"))
    assert sum(any(cb.segments for cb in c.callbacks) for c in spec.chains) >= 3  # GPU users
    for blocking in ("cpu", "callback"):  # safe also with the blocker's accelerator time
        assert analyze(spec, blocking=blocking).schedulable, blocking


def test_the_papers_case_study_says_why_it_is_not_schedulable(capsys):
    from paam import examples
    assert run_cli("analyze", str(examples.path("case_study_1"))) == 1
    out = capsys.readouterr().out
    description, table = out.split("\nchain ", 1)
    description = " ".join(description.split())  # as one line, however it was wrapped
    assert description.startswith("The PAAM paper's case study 1")
    assert "Expected: NOT schedulable" in description and "chains 3 to 6" in description
    assert "mobile_robot.yaml" in description
    assert "NOT schedulable: 4 of 6 critical chains can miss" in table
    result = analyze(load_system(examples.path("case_study_1")))
    assert sorted(c.name for c in result.chains if not c.best_effort and not c.schedulable) == [
        "chain3", "chain4", "chain5", "chain6"]  # what the description says
    assert run_cli("analyze", "--json", str(examples.path("case_study_1"))) == 1
    assert "case study 1" in json.loads(capsys.readouterr().out)["description"]


def test_the_description_is_kept_on_a_round_trip_and_left_out_of_a_plan(tmp_path, capsys):
    from paam.analysis import dump_yaml
    data = yaml.safe_load(plan_input(tmp_path, units=True).read_text())
    data["description"] = "Everything on one executor.\nB and C miss."
    src = write(tmp_path, yaml.safe_dump(data), "described.yaml")
    spec = load_system(src)
    assert spec.description == data["description"]
    assert parse_system(yaml.safe_load(dump_yaml(spec))).description == spec.description
    out = tmp_path / "planned.yaml"
    assert run_cli("plan", str(src), "-o", str(out)) == 0
    capsys.readouterr()
    assert load_system(out).description is None  # it described the input, not the plan


def _example_code(doc: str) -> str:
    """The code block after the docstring's last line that ends in '::'."""
    lines = inspect.cleandoc(doc).splitlines()
    start = max(i for i, line in enumerate(lines) if line.rstrip().endswith("::")) + 1
    return textwrap.dedent("\n".join(lines[start:]))


def test_the_timing_model_example_runs_as_written(capsys):
    import paam
    code = _example_code(paam.TimingModel.__doc__)
    assert "paam.TimingModel(" in code and "start_server" in code
    exec(compile(code, "paam.TimingModel example", "exec"), {})
    out = capsys.readouterr().out
    assert "admitted: all 1 critical chains schedulable; bound of 'perception'" in out
    assert "chain 'perception' would miss its deadline 50.000 ms" in out


def test_the_readme_timing_model_examples_run_as_written():
    """Every Python block of the README that builds a TimingModel runs as written."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for block in re.findall(r"^```python\n(.*?)^```", readme, re.S | re.M):
        if "TimingModel(" in block:
            exec(compile(block, "README.md", "exec"), {})


# --------------------------------------------------------------------------------------------
# Preemption in slices: kappa from the slice (paamd --gpu-preempt)

def test_a_slice_replaces_kappa_by_the_slice_plus_its_launch(case_study):
    from paam.analysis.model import SLICE_LAUNCH_MS
    spec = load_system(case_study)
    assert spec.accelerators["gpu0"].kappa() == pytest.approx(0.130)
    before = {c.name: c.wcrt for c in analyze(spec, stop_at_deadline=False).chains}
    spec.accelerators["gpu0"].slice = 0.020
    assert spec.accelerators["gpu0"].kappa() == pytest.approx(0.020 + SLICE_LAUNCH_MS)
    after = {c.name: c.wcrt for c in analyze(spec, stop_at_deadline=False).chains}
    # A smaller kappa shrinks every segment's A* = A + 2 kappa: no bound grows, chain3 now fits.
    for name, bound in before.items():
        if math.isfinite(bound):
            assert after[name] < bound, name
    assert before["chain3"] > 220 >= after["chain3"]


def test_analyze_gpu_slice_us_and_the_slice_field_agree(tmp_path, case_study, capsys):
    assert run_cli("analyze", str(case_study)) == 1
    capsys.readouterr()
    assert run_cli("analyze", str(case_study), "--gpu-slice-us", "20", "--json") == 1
    flag = json.loads(capsys.readouterr().out)
    assert flag["kappa_ms"]["gpu0"] == pytest.approx(0.035)
    data = yaml.safe_load(case_study.read_text())
    data["accelerators"]["gpu0"]["slice"] = 0.02
    field = write(tmp_path, yaml.safe_dump(data), "sliced.yaml")
    assert run_cli("analyze", str(field), "--json") == 1
    from_field = json.loads(capsys.readouterr().out)
    bound = lambda d, name: next(c for c in d["chains"] if c["name"] == name)
    for name in ("chain1", "chain3", "chain6"):
        assert bound(flag, name) == bound(from_field, name)
    assert run_cli("analyze", str(field)) == 1
    assert "kappa of gpu0: 0.035 ms (preemption in 20 us slices" in capsys.readouterr().out


def test_a_slice_out_of_range_is_bad_input(tmp_path, case_study, capsys):
    assert run_cli("analyze", str(case_study), "--gpu-slice-us", "0") == 2
    assert "--gpu-slice-us must be above 0" in capsys.readouterr().err
    data = yaml.safe_load(case_study.read_text())
    data["accelerators"]["gpu0"]["slice"] = 50
    assert run_cli("analyze", str(write(tmp_path, yaml.safe_dump(data), "bad.yaml"))) == 2
    assert "accelerator 'gpu0': field 'slice'" in capsys.readouterr().err
