"""Shared setup of the ROS 2 tests: an isolated DDS domain on loopback, and process cleanup.

Every test run gets its own ROS_DOMAIN_ID (from the pid) and discovery limited to localhost, so
concurrent runs on one machine do not see each other and nothing leaves the machine. Processes a
test starts go through the ``procs`` fixture, which ends them (SIGTERM, then SIGKILL) however the
test ends.

Without rclpy the tests are skipped, unless PAAM_REQUIRE_ROS=1 (the Makefile's test-ros sets it),
where a missing ROS install is an error rather than a silent skip.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 200))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.pop("ROS_LOCALHOST_ONLY", None)  # deprecated in Jazzy; the range above replaces it
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
os.environ.setdefault("RCUTILS_LOGGING_BUFFERED_STREAM", "0")

try:
    import rclpy  # noqa: F401
    import paam_msgs.msg  # noqa: F401
    _ROS_ERROR = None
except ImportError as err:  # pragma: no cover - depends on the environment
    _ROS_ERROR = err

if _ROS_ERROR is not None:
    if os.environ.get("PAAM_REQUIRE_ROS") == "1":
        raise RuntimeError(f"PAAM_REQUIRE_ROS=1 but ROS 2 does not import: {_ROS_ERROR}; "
                           "run `make ros`")
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture
def ros_context():
    """A fresh rclpy Context for one test, shut down afterwards."""
    import rclpy
    from rclpy.context import Context

    ctx = Context()
    rclpy.init(context=ctx, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
    try:
        yield ctx
    finally:
        if ctx.ok():
            rclpy.shutdown(context=ctx)


class Procs:
    """Starts helper processes and guarantees they are gone after the test."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen] = []

    def python(self, code: str, *args: str, **kw) -> subprocess.Popen:
        """Run ``code`` in a new interpreter of this environment, with the test's environment."""
        return self.start([sys.executable, "-c", code, *args], **kw)

    def start(self, argv: list[str], **kw) -> subprocess.Popen:
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.STDOUT)
        kw.setdefault("stdin", subprocess.PIPE)
        kw.setdefault("start_new_session", True)
        p = subprocess.Popen(argv, **kw)
        self._procs.append(p)
        return p

    @staticmethod
    def readline_until(proc: subprocess.Popen, prefix: str, timeout_sec: float) -> str:
        """Read ``proc``'s stdout until a line starting with ``prefix``; fail on timeout/exit."""
        line = read_line_until(proc, lambda text: text.startswith(prefix), timeout_sec)
        if line is None:
            raise AssertionError(f"no line starting {prefix!r} within {timeout_sec}s; output "
                                 f"so far: {getattr(proc, 'seen_lines', [])}")
        return line

    @staticmethod
    def kill(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        proc.wait(timeout=10)

    def cleanup(self) -> None:
        for p in self._procs:
            if p.stdin is not None and not p.stdin.closed:
                try:
                    p.stdin.close()  # helpers that wait on stdin exit at EOF
                except OSError:
                    pass
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        deadline = time.monotonic() + 5
        for p in self._procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=5)
            for f in (p.stdout, p.stdin):
                if f is not None:
                    f.close()


def read_line_until(proc: subprocess.Popen, match, timeout_sec: float):
    """The first stdout line of ``proc`` for which ``match(line)`` holds, or None at timeout or
    exit. Reads the pipe's file descriptor directly: a buffered reader would keep lines in its
    buffer where select() cannot see them."""
    import selectors
    fd = proc.stdout.fileno()
    buf = getattr(proc, "line_buffer", b"")
    seen = proc.__dict__.setdefault("seen_lines", [])
    deadline = time.monotonic() + timeout_sec
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                text = raw.decode(errors="replace").rstrip()
                seen.append(text)
                if match(text):
                    proc.line_buffer = buf
                    return text
            left = deadline - time.monotonic()
            if left <= 0:
                proc.line_buffer = buf
                return None
            if sel.select(left):
                chunk = os.read(fd, 65536)
                if not chunk:
                    proc.line_buffer = buf
                    return None
                buf += chunk


@pytest.fixture
def procs():
    p = Procs()
    try:
        yield p
    finally:
        p.cleanup()


def wait_until_ready(ctx, subscriptions, timeout_sec: float) -> None:
    """Block until every subscription has a message waiting, without taking any.

    Uses an rcl wait set directly, the way the executors do, so the executor under test later
    sees all of them ready at its first wait.
    """
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

    pending = list(subscriptions)
    deadline = time.monotonic() + timeout_sec
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{len(pending)} subscriptions never became ready")
        with contextlib.ExitStack() as stack:
            stack.enter_context(ctx.handle)
            for s in pending:
                stack.enter_context(s.handle)
            ws = _rclpy.WaitSet(len(pending), 0, 0, 0, 0, 0, ctx.handle)
            ws.clear_entities()
            for s in pending:
                ws.add_subscription(s.handle)
            ws.wait(int(min(left, 0.2) * 1e9))
            ready = set(ws.get_ready_entities("subscription"))
        pending = [s for s in pending if s.handle.pointer not in ready]


def spin_until(executor, done, timeout_sec: float, step_sec: float = 0.05) -> bool:
    """``executor.spin_once(step_sec)`` until ``done()`` or ``timeout_sec`` passed; done()."""
    deadline = time.monotonic() + timeout_sec
    while not done() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=step_sec)
    return done()
