"""MultiThreadedPicasExecutor: several threads, one pool of callbacks, picked by priority."""
from __future__ import annotations

import os
import threading
import time
import uuid

import pytest

pytestmark = pytest.mark.timeout(90)


def _node(ctx, name: str):
    import rclpy
    return rclpy.create_node(f"{name}_{uuid.uuid4().hex[:8]}", context=ctx)


def _executor(ctx, threads: int, **kw):
    from paam.ros import MultiThreadedPicasExecutor
    return MultiThreadedPicasExecutor(threads, context=ctx, **kw)


def _spin_until(executor, done: threading.Event, timeout: float = 20.0) -> None:
    """spin_until_future_complete on a Future set when ``done`` is."""
    from rclpy.task import Future
    fut = Future()
    threading.Thread(target=lambda: (done.wait(timeout), fut.set_result(True)),
                     daemon=True).start()
    executor.spin_until_future_complete(fut, timeout_sec=timeout)
    assert fut.done(), "the executor did not finish the work in time"


def _once(node, seconds: float, record, name: str, group=None):
    """A timer that fires once, sleeps ``seconds`` (the GIL released) and records its span."""
    box = []

    def cb():
        box[0].cancel()
        start = time.monotonic()
        time.sleep(seconds)
        record.append((name, start, time.monotonic(), threading.current_thread().name))
    box.append(node.create_timer(0.01, cb, callback_group=group))
    return box[0]


@pytest.mark.parametrize("by_priority", [True, False])
def test_callbacks_of_different_groups_run_at_the_same_time_on_different_threads(ros_context,
                                                                                 by_priority):
    """Also with callback priorities disabled (rclpy's order, its wait under the same lock)."""
    spans: list = []
    nodes = [_node(ros_context, f"par{i}") for i in range(2)]
    executor = _executor(ros_context, 2, callback_priority=by_priority)
    for i, n in enumerate(nodes):
        _once(n, 1.0, spans, f"t{i}")  # (long: the second thread may start late on a busy machine)
        executor.add_node(n)
    done = threading.Event()
    threading.Thread(target=lambda: (time.sleep(0.05), _wait_len(spans, 2, 10),
                                     done.set()), daemon=True).start()
    _spin_until(executor, done)
    assert len(spans) == 2
    (_, s0, e0, th0), (_, s1, e1, th1) = spans
    assert th0 != th1
    assert max(s0, s1) < min(e0, e1), "the two callbacks did not overlap"
    executor.shutdown()
    for n in nodes:
        n.destroy_node()


def _wait_len(seq, n: int, timeout: float) -> None:
    _wait_len_of(lambda: len(seq), n, timeout)


def _wait_len_of(count, n: int, timeout: float) -> None:
    """Until ``count()`` reaches ``n`` or ``timeout`` passed."""
    deadline = time.monotonic() + timeout
    while count() < n and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize("reentrant", [False, True])
def test_a_mutually_exclusive_group_runs_one_callback_at_a_time_a_reentrant_one_several(
        ros_context, reentrant):
    from rclpy.callback_groups import ReentrantCallbackGroup
    node = _node(ros_context, "groups")
    group = ReentrantCallbackGroup() if reentrant else None  # None: the node's default
    spans: list = []
    lock = threading.Lock()

    def make(name):
        def cb():
            start = time.monotonic()
            time.sleep(0.03)
            with lock:
                spans.append((name, start, time.monotonic()))
        return cb
    for i in range(3):
        node.create_timer(0.02, make(f"t{i}"), callback_group=group)
    executor = _executor(ros_context, 3)
    executor.add_node(node)
    done = threading.Event()
    threading.Timer(0.6, done.set).start()
    _spin_until(executor, done)
    executor.shutdown()
    node.destroy_node()
    assert {s[0] for s in spans} == {"t0", "t1", "t2"}
    ordered = sorted(spans, key=lambda s: s[1])
    overlaps = sum(1 for a, b in zip(ordered, ordered[1:]) if b[1] < a[2])
    if reentrant:
        assert overlaps > 0
    else:
        assert overlaps == 0, ordered


def test_a_freed_thread_runs_the_highest_priority_ready_callback_first(ros_context):
    """Both threads busy with long callbacks while three callbacks of priorities 1, 5 and 3
    become ready: the thread freed first runs them 5, 3, 1 (rclpy's stock executors would
    run them in the order their entities were made)."""
    b1, b2, gnode = (_node(ros_context, n) for n in ("b1", "b2", "g"))
    order: list[int] = []
    guards = {}

    def make_guard(p):
        def cb():
            order.append(p)
            time.sleep(0.05)
        return cb
    for p in (1, 5, 3):
        guards[p] = gnode.create_guard_condition(make_guard(p))
    spans: list = []
    short = _once(b1, 0.25, spans, "short")
    long_ = _once(b2, 2.0, spans, "long")
    executor = _executor(ros_context, 2)
    for n in (b1, b2, gnode):
        executor.add_node(n)
    for entity, p in ((short, 50), (long_, 50), *((g, p) for p, g in guards.items())):
        executor.set_callback_priority(entity, p)

    def trigger_later():
        time.sleep(0.12)  # both long callbacks are running by now
        for p in (1, 5, 3):
            guards[p].trigger()
    threading.Thread(target=trigger_later, daemon=True).start()
    done = threading.Event()
    threading.Thread(target=lambda: (_wait_len(order, 3, 10), _wait_len(spans, 2, 10),
                                     done.set()), daemon=True).start()
    _spin_until(executor, done)
    executor.shutdown()
    for n in (b1, b2, gnode):
        n.destroy_node()
    assert order == [5, 3, 1]
    short_end = next(s[2] for s in spans if s[0] == "short")
    long_end = next(s[2] for s in spans if s[0] == "long")
    assert short_end < long_end


def test_a_callbacks_exception_stops_every_thread_and_is_raised_from_spin(ros_context):
    node = _node(ros_context, "boom")
    ticks = [0]

    def boom():
        raise RuntimeError("boom from a callback")
    node.create_timer(0.05, boom)
    other = _node(ros_context, "ticker")
    other.create_timer(0.005, lambda: ticks.__setitem__(0, ticks[0] + 1))
    executor = _executor(ros_context, 3)
    executor.add_node(node)
    executor.add_node(other)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="boom from a callback"):
        executor.spin()
    assert time.monotonic() - t0 < 5
    assert not [t for t in threading.enumerate() if t.name.startswith("picas-mt-")]
    executor.shutdown()
    node.destroy_node()
    other.destroy_node()


def test_shutdown_from_another_thread_ends_spin_and_its_threads(ros_context):
    node = _node(ros_context, "stop")
    ticks = [0]
    node.create_timer(0.01, lambda: ticks.__setitem__(0, ticks[0] + 1))
    executor = _executor(ros_context, 4)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    _wait_len_of(lambda: ticks[0], 5, 20)  # spinning: the timer has run 5 times
    assert executor.shutdown(timeout_sec=20)
    spinner.join(20)
    assert not spinner.is_alive()
    assert not [t for t in threading.enumerate() if t.name.startswith("picas-mt-")]
    assert ticks[0] >= 5
    node.destroy_node()


def test_spin_rt_pins_each_thread_to_its_cpu_and_reports_every_thread(ros_context):
    cpus = sorted(os.sched_getaffinity(0))[:2]
    want = [cpus[i % len(cpus)] for i in range(3)]
    node = _node(ros_context, "rt")
    seen: dict[str, set] = {}
    lock = threading.Lock()

    def cb():
        with lock:
            seen[threading.current_thread().name] = os.sched_getaffinity(0)
        time.sleep(0.02)
    for _ in range(6):
        node.create_timer(0.005, cb, callback_group=_reentrant())
    executor = _executor(ros_context, 3)
    executor.add_node(node)
    executor.set_executor_priority_cpus(None, cpus)
    logs: list[str] = []
    threading.Timer(1.0, executor.shutdown).start()
    # spun from a thread of its own: thread 0 is the caller, and pinning pytest's main thread
    # would leave every later test (and the processes it starts) on one CPU
    spinner = threading.Thread(target=executor.spin_rt, kwargs={"log": logs.append})
    spinner.start()
    spinner.join(20)
    assert not spinner.is_alive()
    node.destroy_node()
    assert len(executor.rt_reports) == 3 and len(logs) == 3
    assert [r.requested_cpu for r in executor.rt_reports] == want
    assert all(r.cpu_applied for r in executor.rt_reports)
    assert all("thread" in line for line in logs)
    workers = {name: aff for name, aff in seen.items() if name.startswith("picas-mt-")}
    for name, aff in workers.items():
        assert aff == {want[int(name.rsplit("-", 1)[1])]}
    assert os.sched_getaffinity(0) != {want[0]} or len(cpus) == 1  # the test's thread untouched


def _reentrant():
    from rclpy.callback_groups import ReentrantCallbackGroup
    return ReentrantCallbackGroup()


def test_a_coroutine_awaiting_an_accelerator_request_resumes_on_any_thread(ros_context):
    """await_result inside a callback of the multi-threaded executor: a waiter collects it,
    and the callback resumes while other callbacks keep running."""
    from paam.ros import await_result

    class Request:  # what await_result needs of a paam future
        def __init__(self):
            self.event = threading.Event()

        def done(self):
            return self.event.is_set()

        def result(self, timeout_sec=None):
            self.event.wait(timeout_sec)
            return 7

    node = _node(ros_context, "await")
    request = Request()
    events: list = []

    async def waiter():
        box[0].cancel()
        events.append("waiting")
        events.append(("resumed", await await_result(request)))
    box = [node.create_timer(0.01, waiter)]
    ticks = [0]
    node.create_timer(0.01, lambda: ticks.__setitem__(0, ticks[0] + 1),
                      callback_group=_reentrant())
    executor = _executor(ros_context, 2)
    executor.add_node(node)
    # done once the callback waits and 5 ticks ran meanwhile (or 20 s passed)
    threading.Thread(target=lambda: (_wait_len(events, 1, 20),
                                     _wait_len_of(lambda: ticks[0], 5, 20),
                                     request.event.set()), daemon=True).start()
    done = threading.Event()
    threading.Thread(target=lambda: (_wait_len(events, 2, 10), done.set()), daemon=True).start()
    _spin_until(executor, done)
    executor.shutdown()
    node.destroy_node()
    assert events == ["waiting", ("resumed", 7)]
    assert ticks[0] >= 5


def test_bad_thread_counts_and_cpu_lists_are_refused(ros_context):
    with pytest.raises(ValueError, match="num_threads"):
        _executor(ros_context, 0)
    executor = _executor(ros_context, 2)
    with pytest.raises(ValueError, match="cpus"):
        executor.set_executor_priority_cpus(10, [])
    with pytest.raises(ValueError, match="mode"):
        executor.set_executor_priority_cpus(10, [0], mode="fast")
    executor.shutdown()


def _blocked_pair_and_urgent(ros_context, mode: str):
    """Two low callbacks (priority 0, two groups) that each hold their thread until the urgent
    one (priority 10) has run, or ``hold`` seconds; two threads. The urgent one becomes ready
    once every thread that may take a low callback holds one (both without floors, the one
    without a floor else). Returns the low spans (start, end, thread, released by the urgent
    one), the urgent one's (start, thread) and the time it became ready."""
    lows = [_node(ros_context, f"low{i}") for i in range(2)]
    unode = _node(ros_context, "urgent")
    release = threading.Event()
    spans: list = []
    urgent: list = []
    started = [0]
    # Without floors the hold is what the urgent callback waits for; with one, a release long
    # before the hold ends shows it did not wait (a busy machine's delays stay far below it).
    hold = 1.5 if mode == "none" else 20.0

    def low_cb(i):
        def cb():
            timers[i].cancel()
            start = time.monotonic()
            started[0] += 1
            released = release.wait(hold)
            spans.append((start, time.monotonic(), threading.current_thread().name, released))
        return cb
    timers = [n.create_timer(0.01, low_cb(i)) for i, n in enumerate(lows)]

    def urgent_cb():
        urgent.append((time.monotonic(), threading.current_thread().name))
        release.set()
    guard = unode.create_guard_condition(urgent_cb)
    executor = _executor(ros_context, 2,
                         priority_floors=[None, 10] if mode == "floors" else None)
    for n in (*lows, unode):
        executor.add_node(n)
    executor.set_callback_priority(guard, 10)
    ready_at: list = []

    def trigger_later():
        _wait_len_of(lambda: started[0], 2 if mode == "none" else 1, 20)
        time.sleep(0.05)
        ready_at.append(time.monotonic())
        guard.trigger()
    threading.Thread(target=trigger_later, daemon=True).start()
    end = time.monotonic() + 60
    if mode == "set_thread_floor":  # two threads of the caller's, as case study 2 spins them
        def spin(floor):
            executor.set_thread_floor(floor)
            while time.monotonic() < end and len(spans) < 2:
                executor.spin_once(timeout_sec=0.05)
        threads = [threading.Thread(target=spin, args=(f,), name=f"own-{i}")
                   for i, f in enumerate((None, 10))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        done = threading.Event()
        threading.Thread(target=lambda: (_wait_len(spans, 2, 60), done.set()),
                         daemon=True).start()
        _spin_until(executor, done, 60)
    executor.shutdown()
    for n in (*lows, unode):
        n.destroy_node()
    return spans, urgent, ready_at[0]


@pytest.mark.parametrize("mode", ["none", "floors", "set_thread_floor"])
def test_a_thread_with_a_priority_floor_stays_free_for_the_callbacks_it_covers(ros_context,
                                                                                mode):
    """Without floors both threads hold low callbacks and the urgent one waits for the first to
    end (its 1.5 s hold); with thread 1's floor at its priority it runs there while the low
    callback still holds the other thread, and no low callback ever runs on that thread."""
    spans, urgent, ready_at = _blocked_pair_and_urgent(ros_context, mode)
    assert len(spans) == 2 and len(urgent) == 1, (spans, urgent)
    start, thread = urgent[0]
    first_end = min(e for _s, e, _th, _r in spans)
    floor_thread = {"floors": "picas-mt-1", "set_thread_floor": "own-1"}.get(mode)
    if mode == "none":
        # both threads were held: the urgent callback waited for one to end its hold
        assert start >= first_end and not any(r for _s, e, _th, r in spans if e == first_end), \
            (spans, urgent)
        return
    # it ran while the first low callback held its thread, and released it (no 20 s hold)
    assert ready_at <= start < first_end, (spans, urgent, ready_at)
    assert [r for _s, _e, _th, r in sorted(spans)][0], spans
    assert thread == floor_thread
    assert all(th != floor_thread for _s, _e, th, _r in spans), spans
    # the two low callbacks ran one after the other, on the thread without a floor
    (s0, e0, _, _), (s1, e1, _, _) = sorted(spans)
    assert s1 >= e0 - 1e-3


def test_low_callbacks_keep_running_while_a_thread_with_a_floor_waits_for_work(ros_context):
    """The thread with a floor must give the wait up whenever the other thread is free: a low
    timer every 20 ms keeps firing (it would stall behind a floor thread that kept the wait).
    rclpy's guard trigger at a callback's end wakes that wait too, so this catches a floor thread
    that never yields, not a missed wake-up from a thread queueing to lead."""
    node = _node(ros_context, "steady")
    runs: list = []
    node.create_timer(0.02, lambda: runs.append(threading.current_thread().name))
    executor = _executor(ros_context, 2, priority_floors=[None, 10])
    executor.add_node(node)
    done = threading.Event()
    # 20 runs of a 20 ms timer: 0.4 s when nothing stalls it; 20 s at most
    threading.Thread(target=lambda: (time.sleep(0.8), _wait_len(runs, 20, 20), done.set()),
                     daemon=True).start()
    _spin_until(executor, done, 30)  # (no timeout inside: each wait may last for ever)
    executor.shutdown()
    node.destroy_node()
    assert len(runs) >= 20, len(runs)
    assert "picas-mt-1" not in runs


def test_bad_priority_floors_are_refused(ros_context):
    with pytest.raises(ValueError, match="entries"):
        _executor(ros_context, 2, priority_floors=[None])
    with pytest.raises(ValueError, match="no floor"):
        _executor(ros_context, 2, priority_floors=[5, 5])
    with pytest.raises(ValueError, match="callback_priority"):
        _executor(ros_context, 2, priority_floors=[None, 5], callback_priority=False)
    executor = _executor(ros_context, 2, callback_priority=False)
    with pytest.raises(ValueError, match="callback_priority"):
        executor.set_thread_floor(3)
    executor.shutdown()
    executor = _executor(ros_context, 3, priority_floors=[None, 5, 7])
    assert executor.priority_floors == [None, 5, 7]
    executor.shutdown()
