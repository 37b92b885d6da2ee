"""Helpers to run a real paamd for tests, demos and benchmarks.

``start_server()`` launches the ``paamd`` binary on a private socket and stops it on exit::

    with paam.testing.start_server(buckets=2) as srv:
        c = paam.Client(priority=1, socket=srv.socket_path)
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Sequence

from .errors import PaamError


def find_paamd() -> str:
    """Path of the paamd binary: $PAAM_PAAMD, the environment's scripts dir, or PATH."""
    env = os.environ.get("PAAM_PAAMD")
    if env:
        return env
    candidates = [Path(sysconfig.get_path("scripts")) / "paamd", Path(sys.prefix) / "bin" / "paamd"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("paamd")
    if found:
        return found
    raise PaamError("cannot find the paamd binary: install the package (make install) or set PAAM_PAAMD")


class ServerProcess:
    """A running paamd. ``socket_path``, ``pid``, ``stop()``, ``kill()``, ``log()``."""

    def __init__(self, args: Sequence[str], socket_path: str, tmpdir: tempfile.TemporaryDirectory | None,
                 cpus: Sequence[int] | None = None):
        self.socket_path = socket_path
        self._tmp = tmpdir
        self._log = tempfile.TemporaryFile()
        pin = (lambda: os.sched_setaffinity(0, set(cpus))) if cpus else None
        self.proc = subprocess.Popen(list(args), stdout=self._log, stderr=subprocess.STDOUT,
                                     preexec_fn=pin)
        self.pid = self.proc.pid

    def wait_ready(self, timeout_sec: float = 10.0) -> None:
        """Returns once paamd logs "serving on": its socket listens before its workers start,
        so a connection alone does not mean that every worker thread exists yet."""
        deadline = time.monotonic() + timeout_sec
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PaamError(f"paamd exited with status {self.proc.returncode}:\n{self.log()}")
            if "serving on " in self.log():
                return
            time.sleep(0.01)
        self.kill()
        raise PaamError(f"paamd did not start within {timeout_sec} s:\n{self.log()}")

    def log(self) -> str:
        """Everything paamd has written so far. Read with pread: paamd shares the file's
        offset, and a seek here could make its next line overwrite an earlier one."""
        fd, chunks, offset = self._log.fileno(), [], 0
        while chunk := os.pread(fd, 1 << 16, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks).decode(errors="replace")

    def stop(self, timeout_sec: float = 10.0) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_sec)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(*, buckets: int = 1, backend: str = "cpu", socket: str | None = None,
                 admission: str = "none", device_cpu: int | None = None, extra_args: Sequence[str] = (),
                 timeout_sec: float = 10.0, cpus: Sequence[int] | None = None,
                 cuda_devices: Sequence[int] | None = None) -> ServerProcess:
    """Starts paamd and waits until it accepts registrations. Use as a context manager.

    ``cpus``: the cores paamd's threads may run on (its CPU-backend device workers still pin
    themselves to the device core); default: wherever the caller may run.
    ``cuda_devices``: CUDA backend: the GPUs paamd serves (``--cuda-devices``), e.g. ``[0]`` for
    a test whose clients must meet on one GPU; default: every visible GPU, over which paamd
    spreads its registrations."""
    tmp = None
    if socket is None:
        tmp = tempfile.TemporaryDirectory(prefix="paam-")
        socket = os.path.join(tmp.name, "paamd.sock")
    args = [find_paamd(), "--socket", socket, "--backend", backend, "--buckets", str(buckets),
            "--admission", admission]
    if device_cpu is not None:
        args += ["--device-cpu", str(device_cpu)]
    if cuda_devices is not None:
        args += ["--cuda-devices", ",".join(str(int(d)) for d in cuda_devices)]
    args += list(extra_args)
    srv = ServerProcess(args, socket, tmp, cpus)
    srv.wait_ready(timeout_sec)
    return srv
