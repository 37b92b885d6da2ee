"""PicasExecutor: priority-driven picking, side by side with rclpy's SingleThreadedExecutor."""
from __future__ import annotations

import os
import threading
import time
import uuid

import pytest

from conftest import wait_until_ready

pytestmark = pytest.mark.timeout(90)

# A separate ROS 2 process that publishes one message on each topic given on the command line
# (in that order) once every topic has a subscriber, then stays until its stdin closes.
PUBLISHER = r"""
import sys, time, rclpy
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node("picas_test_publisher")
pubs = [node.create_publisher(String, t, 10) for t in sys.argv[1:]]
deadline = time.monotonic() + 30
while any(p.get_subscription_count() == 0 for p in pubs):
    if time.monotonic() > deadline:
        print("NO_SUBSCRIBERS", flush=True); sys.exit(1)
    time.sleep(0.01)
for t, p in zip(sys.argv[1:], pubs):
    p.publish(String(data=t))
print("PUBLISHED", flush=True)
sys.stdin.read()
"""


def _make_executor(kind: str, ctx):
    from rclpy.executors import SingleThreadedExecutor

    from paam.ros import PicasExecutor
    if kind == "stock":
        return SingleThreadedExecutor(context=ctx)
    if kind == "picas-disabled":
        return PicasExecutor(context=ctx, callback_priority=False)
    # "picas-rclpy-wait": waiting through rclpy's _wait_for_ready_callbacks, not its own scanner
    return PicasExecutor(context=ctx, lean_wait=kind == "picas")


def _prio(executor, entity, priority):
    if hasattr(executor, "set_callback_priority"):
        executor.set_callback_priority(entity, priority)


@pytest.mark.parametrize("kind", ["picas", "picas-rclpy-wait", "stock", "picas-disabled"])
def test_high_priority_callback_ready_with_low_ones_runs_first_only_under_picas(
        kind, ros_context, procs):
    """A high-priority subscription that the stock sweep reaches last runs first under PiCAS."""
    import rclpy
    from std_msgs.msg import String

    tag = uuid.uuid4().hex[:8]
    topics = [f"low_a_{tag}", f"low_b_{tag}", f"high_{tag}"]
    node = rclpy.create_node(f"subject_{tag}", context=ros_context)
    order: list[str] = []

    def record(name):
        return lambda _msg: order.append(name)

    subs = [node.create_subscription(String, t, record(t.rsplit("_", 1)[0]), 10) for t in topics]
    timer = None

    def on_timer():
        timer.cancel()
        order.append("low_t")
    timer = node.create_timer(0.02, on_timer)

    executor = _make_executor(kind, ros_context)
    executor.add_node(node)
    for entity, p in [(timer, 1), (subs[0], 2), (subs[1], 3), (subs[2], 10)]:
        _prio(executor, entity, p)

    pub = procs.python(PUBLISHER, *topics)
    procs.readline_until(pub, "PUBLISHED", 30)
    wait_until_ready(ros_context, subs, 10)
    time.sleep(0.03)  # the timer's period has surely elapsed: it is ready too
    for _ in range(4):
        executor.spin_once(timeout_sec=2.0)

    assert sorted(order) == ["high", "low_a", "low_b", "low_t"]
    if kind in ("picas", "picas-rclpy-wait"):
        assert order == ["high", "low_b", "low_a", "low_t"]
    else:
        # rclpy's sweep: timers, then subscriptions in creation order; the high one comes last.
        assert order == ["low_t", "low_a", "low_b", "high"]
    executor.shutdown()
    node.destroy_node()


@pytest.mark.parametrize("kind", ["picas", "picas-rclpy-wait", "stock"])
def test_work_that_becomes_ready_mid_sweep_is_considered_at_the_next_pick(kind, ros_context):
    """PiCAS re-polls readiness before every pick; the stock executor finishes its sweep first."""
    import rclpy

    node = rclpy.create_node(f"fresh_{uuid.uuid4().hex[:8]}", context=ros_context)
    order: list[str] = []
    guard = node.create_guard_condition(lambda: order.append("guard"))
    timers = {}

    def make(name):
        def cb():
            timers[name].cancel()
            if not order:
                guard.trigger()  # the first callback to run makes high-priority work ready
            order.append(name)
        return cb

    for i, name in enumerate(["t1", "t2", "t3"]):
        timers[name] = node.create_timer(0.02, make(name))
    executor = _make_executor(kind, ros_context)
    executor.add_node(node)
    for i, name in enumerate(["t1", "t2", "t3"]):
        _prio(executor, timers[name], i + 1)
    _prio(executor, guard, 10)

    time.sleep(0.03)
    for _ in range(4):
        executor.spin_once(timeout_sec=2.0)

    if kind in ("picas", "picas-rclpy-wait"):
        assert order == ["t3", "guard", "t2", "t1"]
    else:
        assert order == ["t1", "t2", "t3", "guard"]
    executor.shutdown()
    node.destroy_node()


def _timer_slack_ns() -> int:
    import ctypes
    return ctypes.CDLL(None).prctl(30, 0, 0, 0, 0)  # PR_GET_TIMERSLACK


@pytest.mark.parametrize("lean_wait", [True, False])
def test_zero_timeout_waits_run_with_the_least_timer_slack_and_restore_it(
        ros_context, monkeypatch, lean_wait):
    """Each zero-timeout wait (the outranking poll, a re-poll with work pending) would sleep
    for the thread's timer slack on rmw_fastrtps: the executor waits with 1 ns there, keeps the
    thread's own slack for waits that may sleep, and gives it back afterwards."""
    import ctypes

    import rclpy
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

    from paam.ros import PicasExecutor

    waits: list[tuple[int, int]] = []  # (timeout_ns, the waiting thread's slack)

    class RecordingWaitSet(_rclpy.WaitSet):
        def wait(self, timeout_ns):
            waits.append((timeout_ns, _timer_slack_ns()))
            return super().wait(timeout_ns)
    monkeypatch.setattr(_rclpy, "WaitSet", RecordingWaitSet)  # rclpy's wait and the executor's

    node = rclpy.create_node(f"slack_{uuid.uuid4().hex[:8]}", context=ros_context)
    ran: list[str] = []
    low = [node.create_guard_condition((lambda n: lambda: ran.append(n))(n))
           for n in ("low1", "low2")]
    high = node.create_guard_condition(lambda: ran.append("high"))
    executor = PicasExecutor(context=ros_context, lean_wait=lean_wait)
    executor.add_node(node)
    executor.set_callback_priority(high, 5)
    own = _timer_slack_ns()
    libc = ctypes.CDLL(None)
    assert libc.prctl(29, 123456, 0, 0, 0) == 0  # PR_SET_TIMERSLACK: a slack to recognise
    try:
        for g in low:
            g.trigger()
        executor.spin_once(timeout_sec=2.0)  # waits (may sleep), runs low1
        high.trigger()
        executor.spin_once(timeout_sec=2.0)  # polls: high outranks low2; re-polls; runs high
        executor.spin_once(timeout_sec=2.0)  # polls: nothing outranks low2; runs it
        after = _timer_slack_ns()
    finally:
        libc.prctl(29, own, 0, 0, 0)
    assert ran == ["low1", "high", "low2"]
    assert after == 123456
    assert waits[0] == (int(2.0e9), 123456)
    polls = [slack for timeout, slack in waits if timeout == 0]
    assert len(polls) >= 3 and set(polls) == {1}, waits
    assert all(slack == 123456 for timeout, slack in waits if timeout != 0), waits
    executor.shutdown()
    node.destroy_node()


@pytest.mark.parametrize("lean_wait", [True, False])
def test_equal_priorities_run_in_the_order_they_became_ready(ros_context, lean_wait):
    import rclpy

    from paam.ros import PicasExecutor

    node = rclpy.create_node(f"fifo_{uuid.uuid4().hex[:8]}", context=ros_context)
    order: list[str] = []
    guards = {}

    def make(name):
        return lambda: order.append(name)
    # Created (and so swept by rclpy) in the order c, b, a; they become ready a, then b, then c.
    for name in ["c", "b", "a"]:
        guards[name] = node.create_guard_condition(make(name))
    executor = PicasExecutor(context=ros_context, lean_wait=lean_wait)
    executor.add_node(node)
    for g in guards.values():
        executor.set_callback_priority(g, 5)
    guards["a"].trigger()
    executor.spin_once(timeout_sec=0)   # sees a ready, runs it
    guards["b"].trigger()
    executor.spin_once(timeout_sec=0)   # b
    guards["c"].trigger()
    guards["a"].trigger()
    executor.spin_once(timeout_sec=0)   # a and c seen ready together: sweep order (c first)
    executor.spin_once(timeout_sec=0)
    assert order == ["a", "b", "c", "a"]
    # Now make c wait while b arrives later with the same priority: c (earlier) goes first.
    order.clear()
    guards["c"].trigger()
    executor._refresh(0.0, lambda: False)   # the executor sees c ready (and does not run it)
    guards["b"].trigger()
    executor.spin_once(timeout_sec=0)
    executor.spin_once(timeout_sec=0)
    assert order == ["c", "b"]
    executor.shutdown()
    node.destroy_node()


@pytest.mark.parametrize("lean_wait", [True, False])
def test_equal_priorities_on_different_nodes_run_in_the_order_the_nodes_were_added(
        ros_context, lean_wait):
    """rclpy keeps an executor's nodes in a set, whose order follows their addresses: with it,
    which of two equal-priority callbacks on different nodes ran first could differ by run."""
    import rclpy

    from paam.ros import PicasExecutor

    tag = uuid.uuid4().hex[:8]
    nodes = [rclpy.create_node(f"order_{i}_{tag}", context=ros_context) for i in range(12)]
    order: list[int] = []
    guards = [n.create_guard_condition(lambda i=i: order.append(i)) for i, n in enumerate(nodes)]
    added = list(range(12))
    added = added[5:] + added[:5][::-1]  # not creation order, nor the set's
    executor = PicasExecutor(context=ros_context, lean_wait=lean_wait)
    for i in added:
        executor.add_node(nodes[i])
        executor.set_callback_priority(guards[i], 7)
    assert executor.get_nodes() == [nodes[i] for i in added]
    for g in guards:
        g.trigger()
    for _ in range(12):
        executor.spin_once(timeout_sec=0)  # all seen ready in the first wait
    assert order == added
    executor.remove_node(nodes[added[0]])
    executor.add_node(nodes[added[0]])     # added again: now the last
    assert executor.get_nodes()[-1] is nodes[added[0]]
    executor.shutdown()
    for n in nodes:
        n.destroy_node()


def test_callbacks_inherit_priorities_from_their_chains(ros_context):
    import rclpy

    from paam.ros import CallbackSpec, Chain, PicasExecutor, picas_callback_priorities

    node = rclpy.create_node(f"chains_{uuid.uuid4().hex[:8]}", context=ros_context)
    order: list[str] = []
    low = Chain("low", priority=5, period_ms=100,
                callbacks=[CallbackSpec("a1"), CallbackSpec("a2")])
    high = Chain("high", priority=9, period_ms=50,
                 callbacks=[CallbackSpec("b1"), CallbackSpec("b2")])
    timers = {}

    def make(name):
        def cb():
            timers[name].cancel()
            order.append(name)
        return cb
    # Created in the order that the stock sweep would run: a1, a2, b1, b2.
    for chain in (low, high):
        for name in chain.callback_names:
            timers[name] = chain.bind(name, node.create_timer(0.02, make(name)))

    executor = PicasExecutor(context=ros_context)
    executor.add_node(node)
    assert executor.add_chain(low) == {"a1": 1, "a2": 2}
    assert executor.add_chain(high) == {"b1": 3, "b2": 4}   # Algorithm 1 over both chains
    assert picas_callback_priorities([high, low]) == {
        ("low", "a1"): 1, ("low", "a2"): 2, ("high", "b1"): 3, ("high", "b2"): 4}
    assert [executor.callback_priority(timers[n]) for n in ["a1", "a2", "b1", "b2"]] == [1, 2, 3, 4]

    time.sleep(0.03)
    for _ in range(4):
        executor.spin_once(timeout_sec=2.0)
    assert order == ["b2", "b1", "a2", "a1"]
    executor.shutdown()
    node.destroy_node()


def test_chain_priorities_must_be_unique():
    from paam.ros import CallbackSpec, Chain, picas_callback_priorities

    a = Chain("a", priority=3, period_ms=10, callbacks=[CallbackSpec("x")])
    b = Chain("b", priority=3, period_ms=10, callbacks=[CallbackSpec("y")])
    with pytest.raises(ValueError, match="unique"):
        picas_callback_priorities([a, b])
    with pytest.raises(ValueError, match="deadline"):
        Chain("c", priority=1, period_ms=10, deadline_ms=20, callbacks=[CallbackSpec("x")])


def _spin_rt_and_observe(ros_context, rt_priority, cpu):
    """spin_rt in a thread; a timer callback reports the thread's policy and affinity."""
    import rclpy

    from paam.ros import PicasExecutor

    node = rclpy.create_node(f"rt_{uuid.uuid4().hex[:8]}", context=ros_context)
    executor = PicasExecutor(context=ros_context)
    executor.add_node(node)
    executor.set_executor_priority_cpu(rt_priority, cpu)
    seen = {}
    done = threading.Event()

    def probe():
        seen["policy"] = os.sched_getscheduler(0)
        seen["priority"] = os.sched_getparam(0).sched_priority
        seen["cpus"] = os.sched_getaffinity(0)
        done.set()
    node.create_timer(0.01, probe)
    logs = []
    t = threading.Thread(target=lambda: executor.spin_rt(log=logs.append), daemon=True)
    t.start()
    assert done.wait(10), "the executor did not run its callback after spin_rt"
    executor.shutdown()
    t.join(10)
    assert not t.is_alive()
    node.destroy_node()
    return executor.rt_report, seen, logs


def test_spin_rt_applies_sched_fifo_and_affinity_or_says_why_not(ros_context):
    cpu = min(os.sched_getaffinity(0))
    report, seen, logs = _spin_rt_and_observe(ros_context, 1, cpu)
    assert logs and "PicasExecutor real-time settings" in logs[0]
    assert report.cpu_applied and seen["cpus"] == {cpu}
    if report.priority_applied:
        assert seen["policy"] == os.SCHED_FIFO and seen["priority"] == 1
    else:  # a machine that denies SCHED_FIFO: reported, and the executor still ran
        assert seen["policy"] != os.SCHED_FIFO
        assert "SCHED_FIFO priority 1 denied" in str(report) or "not applied" in str(report)


def test_spin_rt_reports_settings_it_cannot_apply_and_keeps_running(ros_context):
    report, seen, logs = _spin_rt_and_observe(ros_context, 150, 100_000)
    assert not report.ok
    assert not report.priority_applied and not report.cpu_applied
    assert "valid range is 1..99" in str(report)
    assert "CPU 100000 not applied" in str(report)
    assert seen["policy"] != os.SCHED_FIFO
    assert "not applied" in logs[0]


@pytest.mark.parametrize("lean_wait", [True, False])
def test_suspended_coroutine_callback_resumes_once_its_future_completes(ros_context, lean_wait):
    """An async callback awaiting a future set by another thread neither blocks nor busy-polls."""
    import rclpy
    from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
    from rclpy.task import Future

    from paam.ros import PicasExecutor

    node = rclpy.create_node(f"coro_{uuid.uuid4().hex[:8]}", context=ros_context)
    executor = PicasExecutor(context=ros_context, lean_wait=lean_wait)
    executor.add_node(node)
    fut = Future()
    events: list[str] = []
    ticks = [0]

    async def waiter():
        waiter_timer.cancel()
        events.append("waiting")
        value = await fut
        events.append(f"resumed:{value}")

    waiter_timer = node.create_timer(0.01, waiter)
    executor.set_callback_priority(waiter_timer, 10)
    # Its own callback group: a suspended coroutine keeps its (mutually exclusive) group busy.
    node.create_timer(0.02, lambda: ticks.__setitem__(0, ticks[0] + 1),
                      callback_group=MutuallyExclusiveCallbackGroup())
    set_at = []

    def complete_later():  # once the coroutine waits and 5 ticks ran meanwhile (or 20 s passed)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (events and ticks[0] >= 5):
            time.sleep(0.005)
        set_at.append(ticks[0])
        fut.set_result(42)
    threading.Thread(target=complete_later, daemon=True).start()

    deadline = time.monotonic() + 30
    while "resumed:42" not in events and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.5)
    assert events == ["waiting", "resumed:42"]
    assert set_at[0] >= 5, "other callbacks must run while the coroutine waits"
    # One pick per tick plus a few for the coroutine and bookkeeping, however long the wait
    # took; polling the suspended coroutine would be a pick per spin, thousands of them.
    assert executor.stats.picks < ticks[0] + 20, (executor.stats, ticks)
    executor.shutdown()
    node.destroy_node()


@pytest.mark.parametrize("lean_wait", [True, False])
def test_a_busy_mutually_exclusive_group_holds_its_other_callbacks(ros_context, lean_wait):
    """While a coroutine of a mutually exclusive group is suspended, the group's other
    callbacks wait (rclpy's rule), and callbacks of other groups run."""
    import rclpy
    from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
    from rclpy.task import Future

    from paam.ros import PicasExecutor

    node = rclpy.create_node(f"group_{uuid.uuid4().hex[:8]}", context=ros_context)
    executor = PicasExecutor(context=ros_context, lean_wait=lean_wait)
    executor.add_node(node)
    group = MutuallyExclusiveCallbackGroup()
    fut = Future()
    events: list[str] = []

    async def waiter():
        waiter_timer.cancel()
        events.append("waiting")
        await fut
        events.append("resumed")

    waiter_timer = node.create_timer(0.01, waiter, callback_group=group)
    sibling = node.create_timer(0.01, lambda: events.append("sibling"), callback_group=group)
    other = node.create_timer(0.01, lambda: events.append("other"))
    for entity, p in ((waiter_timer, 10), (sibling, 5), (other, 1)):
        executor.set_callback_priority(entity, p)
    deadline = time.monotonic() + 5
    while events.count("other") < 5 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.5)
    assert events[0] == "waiting" and "sibling" not in events and "resumed" not in events
    fut.set_result(None)
    while "sibling" not in events and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.5)
    assert "resumed" in events and events.index("resumed") < events.index("sibling")
    executor.shutdown()
    node.destroy_node()


def test_entities_and_nodes_added_or_destroyed_while_spinning_are_waited_on_as_they_are(
        ros_context):
    """The executor's own wait keeps the entity lists between waits: what is created, added or
    destroyed meanwhile must still be seen at the next wait."""
    import rclpy

    from paam.ros import PicasExecutor

    tag = uuid.uuid4().hex[:8]
    node = rclpy.create_node(f"dyn_a_{tag}", context=ros_context)
    executor = PicasExecutor(context=ros_context)
    assert executor._scanner is not None
    executor.add_node(node)
    ran: list[str] = []
    made = {}

    def first():
        ran.append("first")
        if "guard" not in made:  # an entity created by a callback, triggered at once
            made["guard"] = node.create_guard_condition(lambda: ran.append("guard"))
            made["guard"].trigger()
    ticker = node.create_timer(0.01, first)

    def spin_until(pred, what):
        deadline = time.monotonic() + 5
        while not pred() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.2)
        assert pred(), what

    spin_until(lambda: "guard" in ran, "a guard created by a callback was never run")
    node.destroy_timer(ticker)  # destroyed between waits: never waited on again
    executor.spin_once(timeout_sec=0.05)
    count = ran.count("first")
    other = rclpy.create_node(f"dyn_b_{tag}", context=ros_context)
    other.create_timer(0.01, lambda: ran.append("other"))
    executor.add_node(other)  # a node added while the executor has a snapshot
    spin_until(lambda: ran.count("other") >= 3, "a node added later was never waited on")
    assert ran.count("first") == count, "a destroyed timer ran again"
    executor.remove_node(other)
    executor.spin_once(timeout_sec=0.05)
    n_other = ran.count("other")
    t_end = time.monotonic() + 0.1
    while time.monotonic() < t_end:
        executor.spin_once(timeout_sec=0.02)
    assert ran.count("other") == n_other, "a removed node's timer ran"
    # created from another thread while the executor is blocked in its wait: rclpy wakes the
    # executor, which must look at the entity lists again rather than its kept copy
    late = threading.Timer(0.2, lambda: node.create_timer(
        0.01, lambda: ran.append("late")))
    late.start()
    spin_until(lambda: "late" in ran, "a timer created from another thread mid-wait never ran")
    late.join()
    executor.shutdown()
    assert executor._scanner._snap is None, "a shut-down executor still holds the nodes"
    other.destroy_node()
    node.destroy_node()


@pytest.mark.parametrize("lean_wait", [True, False])
def test_every_triggered_callback_runs_in_every_round_highest_priority_first(ros_context,
                                                                             lean_wait):
    """Guard conditions re-triggered round after round: none is lost or run twice."""
    import rclpy

    from paam.ros import PicasExecutor

    node = rclpy.create_node(f"rounds_{uuid.uuid4().hex[:8]}", context=ros_context)
    ran: list[int] = []
    guards = [node.create_guard_condition((lambda i: lambda: ran.append(i))(i))
              for i in range(16)]
    executor = PicasExecutor(context=ros_context, lean_wait=lean_wait)
    executor.add_node(node)
    for i, g in enumerate(guards):
        executor.set_callback_priority(g, i % 4)
    EXPECTED = [i for p in (3, 2, 1, 0) for i in range(16) if i % 4 == p]
    for _ in range(5):  # back to back, as a busy system would
        ran.clear()
        for g in guards:
            g.trigger()
        deadline = time.monotonic() + 10
        while len(ran) < 16 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.5)
        assert ran == EXPECTED
    executor.spin_once(timeout_sec=0.1)  # nothing left: another callback would be a duplicate
    assert ran == EXPECTED
    executor.shutdown()
    node.destroy_node()


def _wait_client_ready(ctx, client, timeout_sec: float) -> None:
    """Block until ``client`` has a response waiting, without taking it."""
    import contextlib

    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

    deadline = time.monotonic() + timeout_sec
    while time.monotonic() < deadline:
        with contextlib.ExitStack() as stack:
            stack.enter_context(ctx.handle)
            stack.enter_context(client.handle)
            ws = _rclpy.WaitSet(0, 0, 0, 1, 0, 0, ctx.handle)
            ws.clear_entities()
            ws.add_client(client.handle)
            ws.wait(int(0.2e9))
            if ws.get_ready_entities("client"):
                return
    raise AssertionError("the service's response never arrived")


def test_a_clients_response_callback_runs_at_the_clients_priority(ros_context):
    """rclpy runs a call_async future's done-callbacks as tasks the executor creates; they
    inherit the priority of the client whose response created them, so a priority-9 client's
    response callback runs before ready priority-1/2 work (not at default_priority, after it)."""
    import rclpy

    from paam.ros import PicasExecutor
    from paam_msgs.srv import Unregister

    tag = uuid.uuid4().hex[:8]
    node = rclpy.create_node(f"client_prio_{tag}", context=ros_context)
    order: list[str] = []
    guards = {name: node.create_guard_condition((lambda n: lambda: order.append(n))(name))
              for name in ("g1", "g2")}

    def serve(req, resp):
        order.append("service")
        for g in guards.values():
            g.trigger()   # low-priority work becomes ready while the response travels
        resp.ok = True
        return resp
    srv = node.create_service(Unregister, f"svc_{tag}", serve)
    cli = node.create_client(Unregister, f"svc_{tag}")
    executor = PicasExecutor(context=ros_context)
    executor.add_node(node)
    executor.set_callback_priority(srv, 10)
    executor.set_callback_priority(cli, 9)
    executor.set_callback_priority(guards["g1"], 1)
    executor.set_callback_priority(guards["g2"], 2)
    assert cli.wait_for_service(timeout_sec=10)

    fut = cli.call_async(Unregister.Request(client_id=1))
    fut.add_done_callback(lambda f: order.append(f"response:{f.result().ok}"))
    deadline = time.monotonic() + 10
    while "service" not in order and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.5)
    assert order == ["service"]
    _wait_client_ready(ros_context, cli, 10)
    deadline = time.monotonic() + 10   # the client's handler, its done-callback task, g2, g1
    while len(order) < 4 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.5)
    assert order == ["service", "response:True", "g2", "g1"]
    # A task created outside any callback keeps default_priority.
    task = executor.create_task(lambda: None)
    assert executor.callback_priority(task) == executor.default_priority
    executor.shutdown()
    node.destroy_node()


# shutdown(): Jazzy's Executor.shutdown returns at once, under a callback still running.

def _spinning(executor):
    t = threading.Thread(target=executor.spin, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("kind", ["picas", "picas-disabled"])
def test_shutdown_waits_for_the_running_callback_and_starts_no_other(kind, ros_context):
    import rclpy

    node = rclpy.create_node(f"shutdown_{uuid.uuid4().hex[:8]}", context=ros_context)
    started, release = threading.Event(), threading.Event()
    runs: list[float] = []
    finished: list[float] = []

    def on_timer():
        runs.append(time.monotonic())
        if len(runs) == 1:
            started.set()
            release.wait(10)
            finished.append(time.monotonic())
    node.create_timer(0.005, on_timer)
    executor = _make_executor(kind, ros_context)
    executor.add_node(node)
    spinner = _spinning(executor)
    assert started.wait(10)
    threading.Timer(0.3, release.set).start()
    t0 = time.monotonic()
    assert executor.shutdown(timeout_sec=10)
    returned = time.monotonic()
    assert finished and finished[0] <= returned, "shutdown() returned under a running callback"
    assert returned - t0 >= 0.25
    spinner.join(5)
    assert not spinner.is_alive()
    n = len(runs)
    time.sleep(0.1)  # the timer is due 20 times over: nothing runs it any more
    assert len(runs) == n
    node.destroy_node()


def test_shutdown_times_out_under_a_running_callback_and_finishes_later(ros_context):
    import rclpy

    node = rclpy.create_node(f"shutdown_{uuid.uuid4().hex[:8]}", context=ros_context)
    started, release = threading.Event(), threading.Event()

    def on_timer():
        started.set()
        release.wait(10)
    node.create_timer(0.005, on_timer)
    executor = _make_executor("picas", ros_context)
    executor.add_node(node)
    spinner = _spinning(executor)
    assert started.wait(10)
    t0 = time.monotonic()
    assert executor.shutdown(timeout_sec=0.2) is False
    assert 0.15 <= time.monotonic() - t0 < 5
    assert executor.shutdown(timeout_sec=0) is False  # still running: 0 does not wait
    release.set()
    assert executor.shutdown(timeout_sec=10)
    spinner.join(5)
    assert not spinner.is_alive()
    node.destroy_node()


@pytest.mark.parametrize("kind", ["picas", "picas-disabled"])
def test_shutdown_from_inside_a_callback_does_not_wait_for_itself(kind, ros_context):
    import rclpy

    node = rclpy.create_node(f"shutdown_{uuid.uuid4().hex[:8]}", context=ros_context)
    executor = _make_executor(kind, ros_context)
    results: list[bool] = []
    node.create_timer(0.005, lambda: results.append(executor.shutdown()))
    executor.add_node(node)
    spinner = _spinning(executor)
    spinner.join(10)
    assert not spinner.is_alive(), "shutdown() from a callback waited for that callback"
    assert results == [True]
    node.destroy_node()


def test_shutdown_abandons_a_coroutine_suspended_on_an_await(ros_context):
    import rclpy
    from rclpy.task import Future

    node = rclpy.create_node(f"shutdown_{uuid.uuid4().hex[:8]}", context=ros_context)
    never = Future()
    suspended = threading.Event()
    timer = None

    async def on_timer():
        timer.cancel()
        suspended.set()
        await never
    timer = node.create_timer(0.005, on_timer)
    executor = _make_executor("picas", ros_context)
    executor.add_node(node)
    spinner = _spinning(executor)
    assert suspended.wait(10)
    result: list[bool] = []
    closer = threading.Thread(target=lambda: result.append(executor.shutdown()), daemon=True)
    closer.start()
    closer.join(10)
    assert not closer.is_alive(), "shutdown() waited for a suspended coroutine"
    assert result == [True]
    spinner.join(5)
    assert not spinner.is_alive()
    node.destroy_node()
