"""``paam soak``: a short run that kills clients and restarts paamd under load loses, duplicates
and corrupts nothing and leaves paamd as a fresh one; the accounting that decides it; bad
arguments."""
import json
import os
import subprocess
import sys

import pytest

from paam.soak import Ledger, _Life

pytestmark = pytest.mark.timeout(240)


def _paam(*args: str, timeout: float = 200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paam.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_a_short_soak_with_client_kills_and_paamd_restarts_loses_nothing(tmp_path):
    out = tmp_path / "soak.json"
    r = _paam("soak", "--duration", "10", "--clients", "3", "--kill-every", "1",
              "--restart-every", "3", "--seed", "1", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(out.read_text())
    q, c, s = report["requests"], report["clients"], report["paamd"]
    assert report["ok"] and report["problems"] == []
    assert (q["lost"], q["duplicated"], q["wrong"]) == (0, 0, 0)
    assert q["served"] > 0
    # Every request a live client sent got exactly one answer: served or a clear error.
    assert q["submitted"] == q["served"] + sum(q["failed"].values()) + \
        q["abandoned_by_killed_clients"]
    assert c["crashed"] == 0 and c["killed"] >= 3
    # Restarts at about 3 s (1.5-4.5) in the first 7.5 s: at least one, alternating signals.
    assert sum(s["restarts"].values()) >= 1
    assert s["after"]["fds"] == s["fresh"]["fds"]
    assert s["after"]["memfd_maps"] == s["fresh"]["memfd_maps"]
    assert not s["leaked"]
    # clients came and went: paamd held their regions at some point
    assert s["peak"]["memfd_maps"] > s["fresh"]["memfd_maps"]
    assert "soak:" in r.stderr and "served" in r.stderr  # progress lines
    assert "result: ok" in r.stdout


def _life() -> _Life:
    return _Life(0, 1)


def test_the_ledger_counts_lost_duplicated_and_wrong_answers():
    led, life = Ledger(), _life()
    for line in ["R 123", "S 1 vector_add", "A 1 ok", "S 2 spin", "E 2 server_died",
                 "C server_not_running", "S 3 vector_add", "A 3 dup of request 1",
                 "S 4 vector_add", "A 4 wrong shape (3,)", "A 4 ok",  # a second answer
                 "A 9 ok",                                            # never submitted
                 "S 5 spin", "T 5", "S 6 vector_add"]:
        led.line(life, line)
    led.ended(life, 0)  # exited without saying B, request 6 unanswered
    assert led.summary() == {"submitted": 6, "served": 1, "failed": {"server_died": 1},
                             "lost": 2, "duplicated": 3, "wrong": 1,
                             "abandoned_by_killed_clients": 0}
    assert led.registrations == 1 and led.connect_failed == {"server_not_running": 1}
    assert led.crashed == 1


def test_a_killed_clients_unanswered_request_is_not_lost():
    led, life = Ledger(), _life()
    for line in ["S 1 vector_add", "A 1 ok", "S 2 spin"]:
        led.line(life, line)
    life.killed = True
    led.ended(life, -9)
    assert (led.lost, led.abandoned, led.crashed) == (0, 1, 0)

    led, life = Ledger(), _life()
    for line in ["S 1 vector_add", "A 1 ok", "B"]:
        led.line(life, line)
    led.ended(life, 0)
    assert (led.lost, led.crashed) == (0, 0)


@pytest.mark.parametrize("args, message", [
    (["--duration", "0"], "--duration must be a positive number, got '0'"),
    (["--duration", "ten"], "--duration must be a positive number, got 'ten'"),
    (["--duration", "5", "--clients", "0"], "--clients must be a positive whole number"),
    (["--duration", "5", "--clients", "1000"], "at most 256"),
    (["--duration", "5", "--kill-every", "-1"], "--kill-every must be 0 or a positive number"),
    (["--duration", "5", "--backend", "tpu"], "invalid choice: 'tpu'"),
    ([], "the following arguments are required: --duration"),
])
def test_bad_arguments_are_refused_naming_the_option(args, message):
    r = _paam("soak", *args, timeout=60)
    assert r.returncode == 2
    assert message in r.stderr, r.stderr


def test_a_json_file_in_a_missing_directory_is_refused_before_the_run(tmp_path):
    r = _paam("soak", "--duration", "5", "--json", str(tmp_path / "nowhere" / "r.json"),
              timeout=60)
    assert r.returncode == 2
    assert "--json" in r.stderr and "does not exist" in r.stderr


def test_a_missing_paamd_is_a_clear_error(tmp_path):
    env = dict(os.environ, PAAM_PAAMD=str(tmp_path / "no-paamd"))
    r = subprocess.run([sys.executable, "-m", "paam.cli", "soak", "--duration", "5"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2
    assert "cannot start paamd" in r.stderr and "no-paamd" in r.stderr, r.stderr
