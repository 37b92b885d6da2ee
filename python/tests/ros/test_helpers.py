"""Chains declared once; paam clients used synchronously and asynchronously in callbacks."""
from __future__ import annotations

import threading
import time
import uuid

import pytest
from conftest import spin_until

pytestmark = pytest.mark.timeout(90)

paam = pytest.importorskip("paam")


@pytest.fixture(scope="module")
def server():
    with paam.testing.start_server(buckets=2) as srv:
        yield srv


def _chain():
    from paam.ros import CallbackSpec, Chain
    return Chain("perception", priority=12, period_ms=100, deadline_ms=80,
                 executor="ex1", executor_cpu=0, executor_priority=5, executor_wait="suspend",
                 callbacks=[CallbackSpec("lidar", cpu_wcet_ms=2, segments_ms=[5],
                                         kernels=["spin"]),
                            CallbackSpec("detect", cpu_wcet_ms=3, segments_ms=[10, 4],
                                         kernels={"vector_add": (1 << 16, 1 << 15)})])


def test_one_chain_declaration_gives_registration_timing_model_and_executor_settings(
        server, ros_context):
    from paam.ros import PicasExecutor

    chain = _chain()
    tm = chain.timing_model("detect")
    assert (tm.chain, tm.callback_index, tm.chain_length) == ("perception", 1, 2)
    assert (tm.period_ms, tm.deadline_ms, tm.cpu_wcet_ms, tm.segments_ms) == (100, 80, 3, [10, 4])
    assert (tm.executor, tm.executor_cpu, tm.executor_priority, tm.executor_wait) == \
        ("ex1", 0, 5, "suspend")
    with chain.client("detect", socket=server.socket_path) as c:
        assert c.priority == chain.priority
        assert c.kernels == ["vector_add"] and c.wait == "suspend"
    with pytest.raises(KeyError, match="no callback 'track'"):
        chain.client("track", socket=server.socket_path)

    ex = PicasExecutor(context=ros_context)
    try:
        assert chain.configure_executor(ex) == {"lidar": 1, "detect": 2}
        assert ex.rt_settings == (5, 0)  # what spin_rt will apply
    finally:
        ex.shutdown()


def test_synchronous_and_asynchronous_requests_inside_executor_callbacks(server, ros_context):
    import rclpy

    from paam.ros import PicasExecutor

    chain = _chain()
    node = rclpy.create_node(f"chain_{uuid.uuid4().hex[:6]}", context=ros_context)
    lidar = chain.client("lidar", socket=server.socket_path)
    out = {}
    timers = {}

    def sync_cb():
        timers["lidar"].cancel()
        out["sync"] = lidar.request("spin", duration_ms=5.0)

    def async_cb():
        timers["detect"].cancel()
        cpu_start = time.monotonic_ns()
        fut = lidar.submit("spin", duration_ms=100.0)
        submitted = time.monotonic_ns()
        x, deadline = 0, cpu_start + 60_000_000_000
        while not fut.done() and time.monotonic_ns() < deadline:  # CPU work meanwhile
            x += 1
        cpu_end = time.monotonic_ns()
        out["async"] = fut.result(timeout_sec=60)
        out["overlap"] = (cpu_start, submitted, cpu_end, lidar.timestamps("spin"))

    timers["lidar"] = chain.bind("lidar", node.create_timer(0.01, sync_cb))
    timers["detect"] = chain.bind("detect", node.create_timer(0.01, async_cb))
    ex = PicasExecutor(context=ros_context)
    ex.add_node(node)
    chain.configure_executor(ex)
    order = []
    ex.on_pick = lambda entity, prio: order.append(prio)
    time.sleep(0.03)  # both timers are ready at the first wait
    spin_until(ex, lambda: len(out) >= 3, 20, 0.5)
    lidar.close()
    ex.shutdown()
    node.destroy_node()

    assert out["sync"] >= 5.0 and out["async"] >= 100.0
    assert order[:2] == [2, 1], "the later stage of the chain (detect) goes first"
    cpu_start, submitted, cpu_end, ts = out["overlap"]
    # submit() returned while the accelerator segment ran (100 ms of device time), and the
    # callback's CPU work went on beside it until it ended (server and test share
    # CLOCK_MONOTONIC): an order, whatever a busy machine does to the durations.
    assert cpu_start <= ts["device_start"] < cpu_end
    assert submitted < ts["device_end"] <= cpu_end


def test_async_callback_awaits_a_paam_future_while_the_executor_runs_others(server, ros_context):
    import rclpy
    from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

    from paam.ros import PicasExecutor, await_result

    node = rclpy.create_node(f"await_{uuid.uuid4().hex[:6]}", context=ros_context)
    client = paam.Client(priority=3, kernels=["spin"], socket=server.socket_path)
    events = []
    ticks = [0]
    waiter_timer = None

    async def waiter():
        waiter_timer.cancel()
        events.append("submitted")
        value = await await_result(client.submit("spin", duration_ms=150.0))
        events.append(value)

    waiter_timer = node.create_timer(0.01, waiter)
    node.create_timer(0.01, lambda: ticks.__setitem__(0, ticks[0] + 1),
                      callback_group=MutuallyExclusiveCallbackGroup())
    ex = PicasExecutor(context=ros_context)
    ex.add_node(node)
    ex.set_callback_priority(waiter_timer, 10)
    spin_until(ex, lambda: len(events) >= 2, 20, 0.5)
    client.close()
    ex.shutdown()
    node.destroy_node()
    assert events[0] == "submitted" and events[1] >= 150.0
    assert ticks[0] >= 3, "other callbacks ran while the accelerator worked"


def test_awaiting_callback_holds_its_priority_against_lower_ones(server, ros_context):
    import rclpy
    from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

    from paam.ros import PicasExecutor, await_result

    node = rclpy.create_node(f"hold_{uuid.uuid4().hex[:6]}", context=ros_context)
    client = paam.Client(priority=3, kernels=["spin"], socket=server.socket_path)
    ticks = {"low": 0, "high": 0}
    seen = {}
    waiter_timer = None

    async def waiter():
        waiter_timer.cancel()
        seen["before"] = dict(ticks)
        await await_result(client.submit("spin", duration_ms=150.0))
        seen["after"] = dict(ticks)

    def tick(name):
        ticks[name] += 1

    waiter_timer = node.create_timer(0.01, waiter)
    low = node.create_timer(0.01, lambda: tick("low"),
                            callback_group=MutuallyExclusiveCallbackGroup())
    high = node.create_timer(0.01, lambda: tick("high"),
                             callback_group=MutuallyExclusiveCallbackGroup())
    ex = PicasExecutor(context=ros_context, awaiting_holds_priority=True)
    ex.add_node(node)
    ex.set_callback_priority(waiter_timer, 10)
    ex.set_callback_priority(low, 5)
    ex.set_callback_priority(high, 20)
    spin_until(ex, lambda: "after" in seen, 20, 0.5)
    for _ in range(20):  # the lower callback runs again once the awaiting one is done
        ex.spin_once(timeout_sec=0.05)
    client.close()
    ex.shutdown()
    node.destroy_node()
    assert "after" in seen
    assert seen["after"]["low"] == seen["before"]["low"], "a lower callback started meanwhile"
    assert seen["after"]["high"] - seen["before"]["high"] >= 3, "higher callbacks were held"
    assert ticks["low"] > seen["after"]["low"]


def test_a_held_callback_with_a_message_waiting_does_not_make_the_executor_spin(ros_context):
    """While a callback awaits the accelerator, a lower one's message waits untaken. rclpy's
    full wait then returns at once (an rmw event of that subscription stays ready); the
    executor must still sleep until the request is done, not poll in a loop."""
    import rclpy
    from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
    from std_msgs.msg import Int64

    from paam.ros import PicasExecutor, await_result

    class Sleeper:  # a request that takes 1 s
        def result(self, timeout_sec=None):
            time.sleep(1.0)
            return 1

    node = rclpy.create_node(f"spinless_{uuid.uuid4().hex[:6]}", context=ros_context)
    pub = node.create_publisher(Int64, "held", 1)
    got = []
    sub = node.create_subscription(Int64, "held", lambda m: got.append(m.data), 1,
                                   callback_group=MutuallyExclusiveCallbackGroup())
    done = []
    timer = None

    async def waiter():
        timer.cancel()
        pub.publish(Int64(data=7))
        done.append(await await_result(Sleeper()))

    timer = node.create_timer(0.01, waiter)
    ex = PicasExecutor(context=ros_context, awaiting_holds_priority=True)
    ex.add_node(node)
    ex.set_callback_priority(timer, 10)
    ex.set_callback_priority(sub, 1)
    spin_until(ex, lambda: done, 10)
    refreshes = ex.stats.refreshes
    spin_until(ex, lambda: got, 10)
    ex.shutdown()
    node.destroy_node()
    assert done == [1] and got == [7]
    # one re-poll per 50 ms timeout and per wake-up: a few dozen in the second, not thousands
    assert refreshes < 200, refreshes


def test_a_busy_executor_collects_the_awaited_result_in_its_own_thread(ros_context):
    """No thread hand-over on the way back while the executor has other work: the request's
    result is collected by the executor's thread; an idle one hands it to a waiter first."""
    import rclpy
    from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

    from paam.ros import PicasExecutor, await_result

    class Request:  # done 50 ms after it was made; records who collected it
        def __init__(self):
            self.t_done = time.monotonic() + 0.05
            self.collector = None

        def done(self):
            return time.monotonic() >= self.t_done

        def result(self, timeout_sec=None):
            while not self.done():
                time.sleep(0.001)
            self.collector = threading.get_ident()
            return 5

    node = rclpy.create_node(f"collect_{uuid.uuid4().hex[:6]}", context=ros_context)
    requests, got = [], []
    timer = busy_timer = None

    async def waiter():
        if len(requests) == 2:
            return
        requests.append(Request())
        got.append(await await_result(requests[-1]))

    def busy():  # always ready again: the executor never sleeps while it runs
        if got:
            busy_timer.cancel()  # then idle while the second request runs
            return
        t_end = time.monotonic() + 0.002
        while time.monotonic() < t_end:
            pass

    timer = node.create_timer(0.2, waiter)
    busy_timer = node.create_timer(0.001, busy, callback_group=MutuallyExclusiveCallbackGroup())
    ex = PicasExecutor(context=ros_context, awaiting_holds_priority=True)
    ex.add_node(node)
    ex.set_callback_priority(timer, 20)  # equal priorities: FIFO, and the wait holds neither
    ex.set_callback_priority(busy_timer, 20)
    me = threading.get_ident()
    spin_until(ex, lambda: len(got) == 2, 10)
    ex.shutdown()
    node.destroy_node()
    assert got == [5, 5]
    assert requests[0].collector == me, "the busy executor's thread collected it"
    assert requests[1].collector not in (None, me), "the idle executor left it to a waiter"


def test_an_error_collected_by_the_executor_reaches_the_awaiting_callback(ros_context):
    import rclpy

    from paam.ros import PicasExecutor, await_result

    class Failed:  # done at once, and its result is an error
        def done(self):
            return True

        def result(self, timeout_sec=None):
            raise paam.ServerDied("gone")

    node = rclpy.create_node(f"collect_err_{uuid.uuid4().hex[:6]}", context=ros_context)
    caught = []
    timer = None

    async def waiter():
        timer.cancel()
        try:
            await await_result(Failed())
        except paam.ServerDied as exc:
            caught.append(str(exc))

    timer = node.create_timer(0.01, waiter)
    ex = PicasExecutor(context=ros_context, awaiting_holds_priority=True)
    ex.add_node(node)
    spin_until(ex, lambda: caught, 5)
    ex.shutdown()
    node.destroy_node()
    assert len(caught) == 1 and "gone" in caught[0]


def test_await_result_carries_the_paam_error(server):
    from paam.ros import await_result

    client = paam.Client(priority=3, kernels=["vector_add"], socket=server.socket_path)
    try:
        import numpy as np
        fut = await_result(client.submit("vector_add", np.ones(4), np.ones(4)))
        deadline = time.monotonic() + 10
        while not fut.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fut.done()
        assert list(fut.result()) == [2.0] * 4
    finally:
        client.close()
    done = threading.Event()

    class Failing:
        def result(self, timeout_sec=None):
            raise paam.ServerDied("gone")
    fut = await_result(Failing())
    fut.add_done_callback(lambda _f: done.set())
    assert done.wait(5)
    with pytest.raises(paam.ServerDied):
        fut.result()


# -- best-effort chains ---------------------------------------------------------------------------

def _be_pair(best_effort: bool = True):
    """A critical chain and a chain whose own deadline (5 ms) its 10 ms segment cannot meet."""
    from paam.ros import CallbackSpec, Chain
    crit = Chain("crit", priority=5, period_ms=100, executor="ex1", executor_cpu=0,
                 executor_priority=90,
                 callbacks=[CallbackSpec("c1", cpu_wcet_ms=1, segments_ms=[5], kernels=["spin"]),
                            CallbackSpec("c2", cpu_wcet_ms=1, kernels=["spin"])])
    be = Chain("be", priority=9, period_ms=100, deadline_ms=5, executor="ex1", executor_cpu=0,
               executor_priority=90, best_effort=best_effort,
               callbacks=[CallbackSpec("b1", cpu_wcet_ms=1, segments_ms=[10], kernels=["spin"])])
    return crit, be


def test_best_effort_chain_is_registered_best_effort_and_not_refused_for_its_deadline():
    crit, be = _be_pair()
    assert be.best_effort and not crit.best_effort and "best_effort=True" in repr(be)
    assert be.timing_model("b1").best_effort and not crit.timing_model("c1").best_effort
    with paam.testing.start_server(admission="analysis", device_cpu=-2) as srv:
        with crit.client("c1", socket=srv.socket_path) as c1:
            assert "admitted" in c1.admission_note
            # Declared critical, the same chain misses its deadline and is refused ...
            with pytest.raises(paam.NotAdmitted, match="'be'"):
                _be_pair(best_effort=False)[1].client("b1", socket=srv.socket_path)
            # ... best-effort, it is admitted (and analysed: it still interferes with 'crit').
            with be.client("b1", socket=srv.socket_path) as b1:
                assert "admitted" in b1.admission_note
                assert b1.request("spin", duration_ms=1) >= 1.0


def test_best_effort_chain_ranks_below_every_critical_chain_in_the_executor(ros_context):
    from paam.ros import PicasExecutor, picas_callback_priorities

    crit, be = _be_pair()  # 'be' has the larger chain priority, yet ranks below
    table = picas_callback_priorities([crit, be])
    assert table == {("be", "b1"): 1, ("crit", "c1"): 2, ("crit", "c2"): 3}
    node = rclpy_node(ros_context)
    ex = PicasExecutor(context=ros_context)
    try:
        timers = {name: node.create_timer(10.0, lambda: None) for name in ("c1", "c2", "b1")}
        crit.bind("c1", timers["c1"]), crit.bind("c2", timers["c2"]), be.bind("b1", timers["b1"])
        assert be.configure_executor(ex) == {"b1": 1}
        assert crit.configure_executor(ex) == {"c1": 2, "c2": 3}
        assert ex.callback_priority(timers["b1"]) < ex.callback_priority(timers["c1"])
    finally:
        ex.shutdown()
        node.destroy_node()


def rclpy_node(ctx):
    import rclpy
    return rclpy.create_node(f"be_{uuid.uuid4().hex[:6]}", context=ctx)


def test_chains_emit_the_analysis_system_with_best_effort(tmp_path):
    from paam.analysis.bounds import analyze
    from paam.analysis.model import dump_yaml, load_system
    from paam.ros import analysis_system

    crit, be = _be_pair()
    spec = analysis_system([crit, be], accelerator="gpu0", buckets=1, overhead_ms=0.05)
    path = tmp_path / "system.yaml"
    path.write_text(dump_yaml(spec))
    assert "best_effort: true" in path.read_text()
    loaded = load_system(path)  # what `paam analyze` reads
    chains = {c.name: c for c in loaded.chains}
    assert chains["be"].best_effort and not chains["crit"].best_effort
    assert chains["crit"].deadline == 100 and chains["be"].deadline == 5
    assert [cb.priority for cb in chains["be"].callbacks] == [1]
    assert [cb.priority for cb in chains["crit"].callbacks] == [2, 3]
    assert loaded.executors["ex1"].cpu == 0 and loaded.executors["ex1"].priority == 90
    result = {c.name: c for c in analyze(loaded).chains}
    assert result["be"].best_effort and not result["be"].schedulable
    assert result["crit"].schedulable
    with pytest.raises(ValueError, match="best_effort"):
        from paam.ros import Chain
        Chain("x", priority=1, period_ms=10, callbacks=[{"name": "a"}], best_effort="yes")


def test_remote_registration_carries_best_effort_where_the_message_has_the_field():
    import types

    from paam_msgs.msg import TimingModel as TimingMsg

    from paam.ros.remote import _fill_timing

    _crit, be = _be_pair()
    tm = be.timing_model("b1")
    with_field = types.SimpleNamespace(best_effort=False)
    _fill_timing(with_field, tm)
    assert with_field.best_effort is True
    msg = TimingMsg()
    if hasattr(msg, "best_effort"):
        _fill_timing(msg, tm)
        assert msg.best_effort
    else:  # paam_msgs without the field: said, not silently dropped
        with pytest.warns(RuntimeWarning, match="registers it as a critical chain"):
            _fill_timing(msg, tm)
        assert msg.chain == "be" and msg.deadline_ms == 5
