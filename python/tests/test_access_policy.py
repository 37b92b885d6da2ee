"""paamd's access policy from Python: bad rules stop paamd with a message that says what was
wrong; a peer that no rule lets in gets paam.errors.PermissionDenied (never a dropped
connection); a rule's priority cap is enforced. docs/security.md describes the policy."""
import json
import os
import subprocess
import tempfile

import pytest

import paam
from paam.testing import find_paamd

NOBODY = 65534


def _paamd_exits(*args: str) -> str:
    """paamd's output when it refuses its command line (fails the test if it starts)."""
    with tempfile.TemporaryDirectory(prefix="paam-") as d:
        proc = subprocess.run([find_paamd(), "--socket", os.path.join(d, "s.sock"), "--device-cpu", "-2", *args],
                              capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    return proc.stderr


def test_bad_rules_are_refused_with_what_was_wrong(tmp_path):
    assert "no user named 'no-such-user-paam'" in _paamd_exits("--allow-user", "no-such-user-paam")
    assert "unknown key 'max-prio'" in _paamd_exits("--allow-group", "0:max-prio=3")
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"allow": [{"user": 0}, {"group": 0, "max_clients": -1}]}))
    out = _paamd_exits("--policy", str(policy))
    assert "policy rule 2" in out and "\"max_clients\" must be a non-negative integer" in out
    assert "cannot read policy file" in _paamd_exits("--policy", str(tmp_path / "missing.json"))


def _register_as_nobody(socket: str, priority: int) -> str:
    """Registers from a child running as nobody; returns 'ok' or the exception's class and text."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.environ["PAAM_TRUSTED_SERVER_UIDS"] = "0"
            try:
                with paam.Client(priority=priority, kernels=["spin"], socket=socket) as c:
                    c.request("spin", duration_ms=0.1)
                result = "ok"
            except paam.PaamError as err:
                result = f"{type(err).__name__}: {err}"
            os.write(w, result.encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return out


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another uid")
def test_other_uids_need_a_rule_and_keep_to_its_priority_cap():
    d = tempfile.mkdtemp(prefix="paam-policy-")
    os.chmod(d, 0o711)  # others may reach the socket, not list or write the directory
    try:
        closed = os.path.join(d, "closed.sock")
        with paam.testing.start_server(socket=closed, device_cpu=-2, extra_args=["--socket-mode", "0666"]):
            out = _register_as_nobody(closed, 1)
        assert out.startswith("PermissionDenied: permission_denied: this paamd does not serve uid 65534"), out
        opened = os.path.join(d, "open.sock")
        with paam.testing.start_server(socket=opened, device_cpu=-2,
                                       extra_args=["--socket-mode", "0666", "--allow-user", f"{NOBODY}:max-priority=5"]):
            high = _register_as_nobody(opened, 6)
            assert high.startswith("PermissionDenied:") and "chain priorities up to 5; asked for 6" in high, high
            assert _register_as_nobody(opened, 5) == "ok"
    finally:
        for name in os.listdir(d):
            os.unlink(os.path.join(d, name))
        os.rmdir(d)
