"""Who owns paamd's socket: paamd refuses a socket directory that another uid owns or that
others can write, and a client refuses to talk to a server that runs as another uid."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest

import paam
from paam.testing import find_paamd

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a server as another uid")


def _serve_as_nobody(path: str, report: int) -> None:
    """A stand-in for a server of another uid (runs in a forked child): it listens as nobody,
    accepts one connection and reports how many bytes the client sent before hanging up."""
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(path)
    s.listen(1)
    os.write(report, b"ready\n")
    s.settimeout(30)
    conn, _ = s.accept()
    conn.settimeout(30)
    try:
        data = conn.recv(1 << 16)
    except OSError:
        data = b""
    os.write(report, f"{len(data)}\n".encode())


@pytest.fixture
def nobody_dir():
    """A directory in /tmp owned by nobody (mode 0700)."""
    d = tempfile.mkdtemp(prefix="paam-nobody-")
    os.chown(d, NOBODY, NOBODY)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def fake_server(nobody_dir):
    """(socket path, reader of the child's report) of a listener that runs as nobody."""
    path = os.path.join(nobody_dir, "paamd.sock")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        code = 1
        try:
            os.close(r)
            _serve_as_nobody(path, w)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    report = os.fdopen(r)
    try:
        assert report.readline().strip() == "ready"
        yield path, report
    finally:
        report.close()
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _bytes_received(report) -> int:
    return int(report.readline().strip())


def test_client_refuses_a_server_of_another_uid_and_sends_nothing(fake_server, monkeypatch):
    path, report = fake_server
    monkeypatch.delenv("PAAM_TRUSTED_SERVER_UIDS", raising=False)
    with pytest.raises(paam.PaamError) as err:
        paam.Client(kernels=["spin"], socket=path)
    assert _bytes_received(report) == 0
    assert isinstance(err.value, paam.errors.PermissionDenied) and isinstance(err.value, PermissionError)
    assert str(err.value) == (f"permission_denied: the server at {path} runs as uid {NOBODY}, not as you (uid 0) "
                              f"or root; set PAAM_TRUSTED_SERVER_UIDS={NOBODY} to trust it")


def test_a_trusted_uid_lets_the_client_register(fake_server, monkeypatch):
    path, report = fake_server
    monkeypatch.setenv("PAAM_TRUSTED_SERVER_UIDS", f"1234,{NOBODY}")
    # The stand-in reads the registration and hangs up without answering.
    with pytest.raises(paam.ServerDied, match="during registration"):
        paam.Client(kernels=["spin"], socket=path)
    assert _bytes_received(report) > 0


def test_a_malformed_trusted_uid_list_is_refused_before_sending(fake_server, monkeypatch):
    path, report = fake_server
    monkeypatch.setenv("PAAM_TRUSTED_SERVER_UIDS", "nobody")
    with pytest.raises(paam.PaamError) as err:
        paam.Client(kernels=["spin"], socket=path)
    assert _bytes_received(report) == 0
    assert isinstance(err.value, paam.errors.InvalidArgument)
    assert "PAAM_TRUSTED_SERVER_UIDS" in str(err.value) and "'nobody'" in str(err.value)


def _paamd_refuses(socket_path: str) -> str:
    """paamd's stderr when it refuses to start on socket_path (fails the test if it serves)."""
    proc = subprocess.Popen([find_paamd(), "--socket", socket_path, "--device-cpu", "-2"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.terminate()
        out, _ = proc.communicate()
        pytest.fail(f"paamd served on {socket_path}:\n{out}")
    assert proc.returncode == 1, out
    return out


def test_paamd_refuses_a_directory_of_another_uid(nobody_dir):
    out = _paamd_refuses(os.path.join(nobody_dir, "paamd.sock"))
    assert f"socket directory {nobody_dir} is owned by uid {NOBODY} (mode 0700)" in out
    assert "paamd needs a directory owned by its own uid 0" in out


def test_paamd_refuses_a_directory_others_can_write(tmp_path):
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(0o777)
    out = _paamd_refuses(str(d / "paamd.sock"))
    assert f"socket directory {d} has mode 0777" in out
    assert "group or others can write it" in out


def test_paamd_makes_its_directory_private_and_the_socket_mode_explicit(tmp_path):
    sock = tmp_path / "new" / "paamd.sock"
    with paam.testing.start_server(socket=str(sock), device_cpu=-2, extra_args=["--socket-mode", "0660"]):
        assert oct(sock.parent.stat().st_mode & 0o777) == oct(0o700)
        assert oct(sock.stat().st_mode & 0o777) == oct(0o660)
        with paam.Client(kernels=["spin"], socket=str(sock)) as c:
            assert c.request("spin", duration_ms=0.1) >= 0.1
