"""Shared setup of the experiments' tests: the ROS 2 fixtures of ``python/tests/ros`` (an
isolated DDS domain on loopback, ``ros_context``, ``procs``), loaded from that conftest so that
nothing is written twice.

A test that needs ROS 2 (rclpy, paam_msgs and std_msgs) uses the ``ros_context`` fixture or is
marked ``@pytest.mark.ros``; without ROS 2 it is skipped, unless PAAM_REQUIRE_ROS=1 (the
Makefile's test-py and test-ros set it), where a missing ROS install is an error.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

_ROS_CONFTEST = Path(__file__).resolve().parents[2] / "python" / "tests" / "ros" / "conftest.py"


def _load_ros_conftest():
    spec = importlib.util.spec_from_file_location("paam_ros_test_fixtures", _ROS_CONFTEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # (raises under PAAM_REQUIRE_ROS=1 without ROS 2)
    return module


_ros = _load_ros_conftest()
ros_context = _ros.ros_context
procs = _ros.procs


def _ros_missing() -> str | None:
    """Why the ROS 2 tests cannot run here, or None."""
    if _ros._ROS_ERROR is not None:
        return f"ROS 2 does not import ({_ros._ROS_ERROR}): `make ros`"
    try:
        import std_msgs.msg  # noqa: F401
    except ImportError as err:
        return f"std_msgs does not import ({err}): `make ros`"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ros: the test needs ROS 2 (skipped without it, an "
                                       "error under PAAM_REQUIRE_ROS=1)")


@pytest.fixture(autouse=True)
def _keep_cpu_affinity():
    """Give the test process its cores back after each test: code that pins the calling thread,
    as it would in its own child process (case_study2.cpp.run), must not leave the processes
    later tests start on one core."""
    cpus = os.sched_getaffinity(0)
    yield
    if os.sched_getaffinity(0) != cpus:
        os.sched_setaffinity(0, cpus)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("ros") is None and "ros_context" not in item.fixturenames:
        return
    why = _ros_missing()
    if why is None:
        return
    if os.environ.get("PAAM_REQUIRE_ROS") == "1":
        pytest.fail(f"PAAM_REQUIRE_ROS=1 but {why}", pytrace=False)
    pytest.skip(why)
