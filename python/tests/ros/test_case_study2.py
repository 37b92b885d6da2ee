"""Case study 2's harness around rclpy executors."""
from __future__ import annotations

import gc
import threading
import time

import pytest

pytestmark = pytest.mark.timeout(90)


def test_an_mt_executor_is_shut_down_only_after_its_started_and_queued_callbacks(ros_context,
                                                                               capfd):
    import rclpy
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor

    from paam_experiments.case_study2.executor import drain_and_shut_down

    node = rclpy.create_node("drain_test", context=ros_context)
    lock = threading.Lock()
    running, finished = [0], []

    def slow():
        with lock:
            running[0] += 1
        time.sleep(0.2)
        with lock:
            running[0] -= 1
            finished.append(time.monotonic())

    # Two threads, a callback every 5 ms that takes 200 ms: when the spinning stops, two run and
    # more wait in the pool's queue.
    timer = node.create_timer(0.005, slow, callback_group=ReentrantCallbackGroup())
    ex = MultiThreadedExecutor(num_threads=2, context=ros_context)
    ex.add_node(node)
    # At least half a second, and on until a callback is in flight (a busy machine's pool
    # threads may start late).
    start, deadline = time.monotonic(), time.monotonic() + 20
    while time.monotonic() < deadline and (time.monotonic() - start < 0.5 or running[0] == 0):
        ex.spin_once(timeout_sec=0.05)
    assert running[0] > 0, "no callback in flight when the spinning stopped: the test tests nothing"

    assert drain_and_shut_down(ex, timeout_s=30)
    returned = time.monotonic()
    assert running[0] == 0
    timer.cancel()
    node.destroy_node()
    time.sleep(0.5)
    assert not [t for t in finished if t > returned]
    del ex
    gc.collect()
    assert "never retrieved" not in capfd.readouterr().err


def test_drain_reports_a_callback_still_running_after_the_timeout(ros_context):
    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from paam_experiments.case_study2.executor import drain_and_shut_down

    node = rclpy.create_node("drain_timeout_test", context=ros_context)
    release = threading.Event()
    started = threading.Event()

    def stuck():
        started.set()
        release.wait(10)

    node.create_timer(0.001, stuck)
    ex = MultiThreadedExecutor(num_threads=2, context=ros_context)
    ex.add_node(node)
    while not started.is_set():
        ex.spin_once(timeout_sec=0.05)
    try:
        t0 = time.monotonic()
        assert not drain_and_shut_down(ex, timeout_s=0.3)
        assert time.monotonic() - t0 < 5
    finally:
        release.set()
    node.destroy_node()

