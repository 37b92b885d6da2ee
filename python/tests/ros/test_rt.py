"""paam.ros.rt: SCHED_FIFO, the nice fallback where it is refused, and CPU affinity.

This VM runs as root, so the refusals are simulated: os.sched_setscheduler (and os.setpriority)
raise EPERM as on a machine without CAP_SYS_NICE. Every test runs in a fresh thread, whose
policy, nice value and affinity die with it.
"""
from __future__ import annotations

import ctypes
import errno
import logging
import os
import threading

import pytest

from paam.ros import rt

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="Linux only")


def _in_thread(fn):
    """Run ``fn`` in a new thread; return (its result, the thread's policy, nice, affinity)."""
    out = {}

    def body():
        out["result"] = fn()
        out["policy"] = os.sched_getscheduler(0)
        out["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        out["cpus"] = os.sched_getaffinity(0)
    t = threading.Thread(target=body)
    t.start()
    t.join(10)
    assert "result" in out, "the thread failed"
    return out["result"], out["policy"], out["nice"], out["cpus"]


def _refuse(*names):
    def raiser(*_args, **_kw):
        raise PermissionError(errno.EPERM, "Operation not permitted")
    return {name: raiser for name in names}


@pytest.fixture
def deny(monkeypatch):
    """deny("sched_setscheduler", "setpriority"): those os calls raise EPERM."""
    def apply(*names):
        for name, fn in _refuse(*names).items():
            monkeypatch.setattr(os, name, fn)
    return apply


def test_nice_ladder_maps_higher_rt_priority_to_lower_nice():
    assert rt.nice_for(99) == rt.nice_for(90) == -20
    assert rt.nice_for(89) == -19 and rt.nice_for(80) == -10
    assert rt.nice_for(70) == rt.nice_for(1) == 0
    ladder = [rt.nice_for(p) for p in range(1, 100)]
    assert ladder == sorted(ladder, reverse=True)


def test_sched_fifo_applied_when_permitted():
    cpu = min(os.sched_getaffinity(0))
    report, policy, _nice, cpus = _in_thread(lambda: rt.apply_rt(5, cpu, log=lambda _l: None))
    if not report.priority_applied:
        pytest.skip(f"this machine refuses SCHED_FIFO: {report}")
    assert policy == os.SCHED_FIFO and report.policy == "SCHED_FIFO" and report.ok
    assert cpus == {cpu} and report.cpu_applied
    assert report.priority_summary == "SCHED_FIFO 5"


def test_refused_sched_fifo_falls_back_to_the_nice_ladder_and_still_pins(deny):
    deny("sched_setscheduler")
    cpu = min(os.sched_getaffinity(0))
    lines = []
    report, policy, nice, cpus = _in_thread(lambda: rt.apply_rt(80, cpu, log=lines.append))
    assert policy == os.SCHED_OTHER and nice == -10 == rt.nice_for(80)
    assert cpus == {cpu} and report.cpu_applied
    assert not report.priority_applied and report.fallback and not report.ok
    assert (report.policy, report.nice) == ("nice", -10)
    assert len(lines) == 1
    assert "SCHED_FIFO priority 80 denied (EPERM)" in lines[0]
    assert "nice -10 (from RT priority 80) instead" in lines[0]
    assert f"pinned to CPU {cpu}" in lines[0]
    assert report.priority_summary == "nice -10 (fallback)"


def _timer_slack_ns() -> int:
    """The calling thread's timer slack (prctl PR_GET_TIMERSLACK)."""
    return ctypes.CDLL(None).prctl(30, 0, 0, 0, 0)


def test_the_nice_fallback_gives_the_thread_the_least_timer_slack(deny):
    # A SCHED_OTHER thread's zero-timeout waits sleep up to its slack (50 µs by default);
    # SCHED_FIFO has none, so the fallback takes it away too, in the calling thread only.
    deny("sched_setscheduler")
    before = _timer_slack_ns()
    lines = []
    (report, slack), *_ = _in_thread(
        lambda: (rt.apply_rt(80, None, log=lines.append), _timer_slack_ns()))
    assert slack == rt.TIMER_SLACK_NS == report.timer_slack_ns
    assert f"timer slack {rt.TIMER_SLACK_NS} ns" in lines[0]
    assert _timer_slack_ns() == before  # this thread's own is untouched
    # A thread whose nice value is refused keeps its slack as well.
    deny("setpriority")
    (report, slack), *_ = _in_thread(
        lambda: (rt.apply_rt(80, None, log=lambda _l: None), _timer_slack_ns()))
    assert report.timer_slack_ns is None and slack == before


def _set_timer_slack_ns(ns: int) -> None:
    assert ctypes.CDLL(None).prctl(29, ns, 0, 0, 0) == 0


def test_tighten_timer_slack_gives_the_least_and_restore_gives_the_old_one_back():
    # What the PicasExecutor wraps its zero-timeout waits in (each would sleep for the slack).
    def body():
        _set_timer_slack_ns(123456)
        previous = rt.tighten_timer_slack()
        inside = _timer_slack_ns()
        rt.restore_timer_slack(previous)
        return previous, inside, _timer_slack_ns()
    (previous, inside, after), *_ = _in_thread(body)
    assert (previous, inside, after) == (123456, rt.TIMER_SLACK_NS, 123456)


def test_tighten_timer_slack_leaves_a_least_slack_alone(monkeypatch):
    # Already at 1 ns (apply_rt ran): one prctl to read it, none to set or restore it, and
    # none at all on the thread's later waits.
    real = rt._libc_prctl()
    calls = []

    def prctl(option, *args):
        calls.append(option)
        return real(option, *args)
    monkeypatch.setattr(rt, "_prctl", prctl)

    def body():
        _set_timer_slack_ns(1)
        previous = rt.tighten_timer_slack()
        rt.restore_timer_slack(previous)
        again = rt.tighten_timer_slack()
        rt.restore_timer_slack(again)
        return previous, again, _timer_slack_ns()
    (previous, again, after), *_ = _in_thread(body)
    assert (previous, again, after) == (None, None, 1)
    assert calls == [rt._PR_GET_TIMERSLACK]
    # A thread whose slack apply_rt set asks nothing either.
    calls.clear()
    (previous,), *_ = _in_thread(lambda: (rt._apply_timer_slack(rt.RtReport(None, None)),
                                          rt.tighten_timer_slack())[1:])
    assert previous is None and calls == [rt._PR_SET_TIMERSLACK]


def test_tighten_timer_slack_carries_on_without_prctl(monkeypatch):
    # No libc prctl (not Linux): looked up once, then nothing; never raises.
    def no_libc(*_a, **_kw):
        raise OSError("no libc here")
    monkeypatch.setattr(rt, "_prctl", None)
    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert rt.tighten_timer_slack() is None
    assert rt._prctl is False
    rt.restore_timer_slack(None)
    assert rt.tighten_timer_slack() is None
    # A prctl that fails: the slack is left as it is and nothing is restored.
    monkeypatch.setattr(rt, "_prctl", lambda option, *_a: -1)
    assert rt.tighten_timer_slack() is None
    monkeypatch.setattr(rt, "_prctl", lambda option, *_a: 50000 if option == 30 else -1)
    assert rt.tighten_timer_slack() is None


def test_nice_refused_too_keeps_sched_other_and_never_raises(deny):
    deny("sched_setscheduler", "setpriority")
    report, policy, nice, _cpus = _in_thread(lambda: rt.apply_rt(90, None, log=lambda _l: None))
    assert policy == os.SCHED_OTHER and nice == 0
    assert report.policy == "SCHED_OTHER" and report.nice == -20 and not report.ok
    assert "nice -20 (from RT priority 90) denied" in str(report)
    assert "stays SCHED_OTHER" in str(report)
    assert report.priority_summary.startswith("nice -20 denied")


@pytest.fixture
def deny_fifo_only(monkeypatch):
    """SCHED_FIFO raises EPERM, every other policy (SCHED_IDLE) goes through: a machine that
    denies real-time priorities to an unprivileged user."""
    real = os.sched_setscheduler

    def setscheduler(pid, policy, param):
        if policy == os.SCHED_FIFO:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return real(pid, policy, param)
    monkeypatch.setattr(os, "sched_setscheduler", setscheduler)


@pytest.mark.parametrize("mode", ["auto", "nice"])
def test_best_effort_thread_gets_sched_idle_instead_of_a_nice_value(deny_fifo_only, mode):
    lines = []
    report, policy, nice, _ = _in_thread(lambda: rt.apply_rt(70, None, mode=mode,
                                                             best_effort=True, log=lines.append))
    assert policy == os.SCHED_IDLE and nice == 0
    assert report.policy == "SCHED_IDLE" and report.fallback == (mode == "auto")
    assert report.ok == (mode == "nice")  # a fallback is never "ok"
    assert report.priority_summary == ("SCHED_IDLE (fallback)" if mode == "auto" else "SCHED_IDLE")
    assert "SCHED_IDLE (best-effort, from RT priority 70)" in lines[0]


def test_best_effort_thread_keeps_sched_fifo_where_it_is_permitted():
    report, policy, _nice, _ = _in_thread(lambda: rt.apply_rt(5, None, best_effort=True,
                                                              log=lambda _l: None))
    if not report.priority_applied:
        pytest.skip(f"this machine refuses SCHED_FIFO: {report}")
    assert policy == os.SCHED_FIFO and report.policy == "SCHED_FIFO"


def test_best_effort_falls_back_to_the_nice_ladder_where_sched_idle_is_refused_too(deny):
    deny("sched_setscheduler")
    report, policy, nice, _ = _in_thread(lambda: rt.apply_rt(75, None, best_effort=True,
                                                             log=lambda _l: None))
    assert policy == os.SCHED_OTHER and nice == -5 and report.policy == "nice"
    assert "SCHED_IDLE (best-effort, from RT priority 75) denied" in str(report)


def test_only_an_executor_of_best_effort_chains_alone_is_best_effort(ros_context, deny_fifo_only):
    from paam.ros import CallbackSpec, Chain, PicasExecutor

    def chain(name, best_effort):
        return Chain(name, priority=1 if best_effort else 2, period_ms=100, best_effort=best_effort,
                     callbacks=[CallbackSpec(f"{name}_cb", cpu_wcet_ms=1)],
                     executor="e", executor_priority=70)
    be_only, mixed = PicasExecutor(context=ros_context), PicasExecutor(context=ros_context)
    try:
        chain("be", True).configure_executor(be_only)
        chain("be", True).configure_executor(mixed)
        chain("crit", False).configure_executor(mixed)
        policies = [_in_thread(lambda ex=ex: ex.apply_rt())[1] for ex in (be_only, mixed)]
    finally:
        be_only.shutdown()
        mixed.shutdown()
    assert policies == [os.SCHED_IDLE, os.SCHED_OTHER]
    assert mixed.rt_report.policy == "nice" and mixed.rt_report.nice == 0


def test_fifo_mode_does_not_fall_back(deny):
    deny("sched_setscheduler")
    report, policy, nice, _ = _in_thread(lambda: rt.apply_rt(80, None, mode="fifo",
                                                             log=lambda _l: None))
    assert policy == os.SCHED_OTHER and nice == 0 and report.nice is None
    assert report.priority_summary.startswith("SCHED_FIFO 80 denied")


def test_invalid_priority_is_reported_not_mapped_to_nice():
    report, policy, nice, _ = _in_thread(lambda: rt.apply_rt(150, None, log=lambda _l: None))
    assert policy == os.SCHED_OTHER and nice == 0 and report.nice is None
    assert "valid range is 1..99" in str(report)


def test_one_warning_on_the_paam_rt_logger_without_a_log_callable(deny, caplog):
    deny("sched_setscheduler")
    with caplog.at_level(logging.INFO, logger="paam.rt"):
        _in_thread(lambda: rt.apply_rt(85, None))
    records = [r for r in caplog.records if r.name == "paam.rt"]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    assert "nice -15" in records[0].getMessage()


def test_eval_apply_priority_is_the_same_implementation(deny):
    from paam_experiments import common
    assert common.nice_for is rt.nice_for
    assert _in_thread(lambda: common.apply_priority(80, "nice"))[:3] == \
        ("nice -10", os.SCHED_OTHER, -10)
    assert _in_thread(lambda: common.apply_priority(None, "auto"))[0] == "SCHED_OTHER nice 0"
    deny("sched_setscheduler")
    assert _in_thread(lambda: common.apply_priority(80, "auto"))[:3] == \
        ("nice -10 (fallback)", os.SCHED_OTHER, -10)


def test_spin_rt_falls_back_to_nice_where_sched_fifo_is_refused(ros_context, deny):
    import uuid

    import rclpy

    from paam.ros import PicasExecutor

    deny("sched_setscheduler")
    node = rclpy.create_node(f"rtfb_{uuid.uuid4().hex[:8]}", context=ros_context)
    executor = PicasExecutor(context=ros_context)
    executor.add_node(node)
    cpu = min(os.sched_getaffinity(0))
    executor.set_executor_priority_cpu(85, cpu)
    seen, done, logs = {}, threading.Event(), []

    def probe():
        seen["policy"] = os.sched_getscheduler(0)
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        seen["cpus"] = os.sched_getaffinity(0)
        done.set()
    node.create_timer(0.01, probe)
    t = threading.Thread(target=lambda: executor.spin_rt(log=logs.append), daemon=True)
    t.start()
    try:
        assert done.wait(10), "the executor did not spin after a refused SCHED_FIFO"
    finally:
        executor.shutdown()
        t.join(10)
        node.destroy_node()
    assert seen == {"policy": os.SCHED_OTHER, "nice": -15, "cpus": {cpu}}
    assert len(logs) == 1 and "nice -15 (from RT priority 85) instead" in logs[0]
    assert executor.rt_report.policy == "nice"


def _named_thread(name: str, started, stop, policy=None):
    """A thread that names itself ``name`` (its comm, as Fast DDS names its threads), optionally
    sets its own policy, says its tid through ``started`` and waits for ``stop``."""
    import ctypes
    import os
    import threading

    def body():
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
        if policy is not None:
            os.sched_setscheduler(0, policy, os.sched_param(0))
        started.put(threading.get_native_id())
        stop.wait(30)
    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, started.get(timeout=10)


def _dds_window(caller_setup):
    """In a fresh thread (its policy dies with it): ``caller_setup()``, then a SCHED_OTHER thread
    from before the window, and in ``rt.dds_threads_rt()`` a DDS sender thread, another DDS
    thread and one that sets SCHED_IDLE itself. Returns the policies, RT priorities and nice
    values after the window, by name (``caller`` for the calling thread), and the helper's
    report."""
    import os
    import queue
    import threading

    out, stop = {}, threading.Event()

    def body():
        if caller_setup() is False:
            out["skip"] = True
            return
        started = queue.Queue()
        # deliberately SCHED_OTHER, from before the window
        tids = {"old": _named_thread("old.thread", started, stop, os.SCHED_OTHER)[1]}
        with rt.dds_threads_rt() as report:
            out["in_window"] = os.sched_getscheduler(0)
            tids["asyn"] = _named_thread("dds.asyn.0.0", started, stop)[1]
            tids["udp"] = _named_thread("dds.udp.7400", started, stop)[1]
            tids["idle"] = _named_thread("own.idle", started, stop, os.SCHED_IDLE)[1]
        tids["caller"] = threading.get_native_id()
        for k, tid in tids.items():
            out[k] = (os.sched_getscheduler(tid), os.sched_getparam(tid).sched_priority,
                      os.getpriority(os.PRIO_PROCESS, tid))
        out["report"] = report
        stop.set()
    t = threading.Thread(target=body)
    t.start()
    t.join(30)
    stop.set()
    assert "report" in out or out.get("skip"), "the thread failed"
    return out


def test_dds_threads_get_the_callers_sched_fifo_but_the_sender_thread():
    import os

    if not hasattr(os, "sched_setscheduler"):
        pytest.skip("Linux only")

    def fifo():
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(3))
        except OSError:
            return False
    out = _dds_window(fifo)
    if out.get("skip"):
        pytest.skip("this machine refuses SCHED_FIFO")
    assert out["in_window"] == os.SCHED_OTHER  # the threads are born SCHED_OTHER
    assert out["caller"][:2] == (os.SCHED_FIFO, 3)
    assert out["udp"][:2] == (os.SCHED_FIFO, 3)  # a new thread: the caller's priority back
    assert out["asyn"][:2] == (os.SCHED_OTHER, 0)  # the sender thread: never at SCHED_FIFO
    assert out["old"][:2] == (os.SCHED_OTHER, 0)  # from before the window: left alone
    assert out["idle"][0] == os.SCHED_IDLE  # set its own policy: left alone
    assert out["report"] == {"raised": ["dds.udp.7400"], "kept": ["dds.asyn.0.0"]}


def test_dds_threads_inherit_the_nice_fallback_as_they_are():
    import os
    import threading

    if not hasattr(os, "sched_setscheduler"):
        pytest.skip("Linux only")

    def nice():  # what apply_rt gives where SCHED_FIFO is denied: SCHED_OTHER at a nice value
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 7)  # raising: always allowed
    out = _dds_window(nice)
    assert out["in_window"] == os.SCHED_OTHER
    for k in ("caller", "udp", "asyn"):
        assert out[k] == (os.SCHED_OTHER, 0, 7), k
    assert out["report"] == {"raised": [], "kept": []}


def test_dds_threads_never_raises_where_the_policy_calls_fail(monkeypatch):
    import errno
    import os

    def refuse(*_args):
        raise PermissionError(errno.EPERM, "Operation not permitted")
    with rt.dds_threads_rt() as report:  # SCHED_OTHER: nothing to do
        pass
    assert report == {"raised": [], "kept": []}
    monkeypatch.setattr(os, "sched_getscheduler", refuse)
    with rt.dds_threads_rt() as report:
        pass
    assert report == {"raised": [], "kept": []}
    monkeypatch.setattr(os, "sched_getscheduler", lambda _pid: os.SCHED_FIFO)
    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    with rt.dds_threads_rt() as report:  # "FIFO", but the drop is refused
        pass
    assert report == {"raised": [], "kept": []}


def test_thread_names_are_read_once_the_threads_have_set_them(monkeypatch):
    # A thread starts under its creator's name and renames itself when it runs (Fast DDS's
    # sender thread does): dds_threads_rt must sort it by the name it sets, not the inherited one.
    import ctypes
    import time
    libc = ctypes.CDLL(None, use_errno=True)
    started, rename, end, tid = threading.Event(), threading.Event(), threading.Event(), []

    def body():
        tid.append(threading.get_native_id())
        started.set()
        rename.wait(20)  # renames itself once the test has seen the inherited name
        libc.prctl(15, b"dds.asyn.9.9", 0, 0, 0)  # PR_SET_NAME
        end.wait(20)
    t = threading.Thread(target=body)
    t.start()
    started.wait()
    assert not rt._thread_name(tid[0]).startswith("dds.")  # not named yet
    rename.set()
    # (a settling time that a busy machine's late rename cannot outlast; it ends at the rename)
    with monkeypatch.context() as m:
        m.setattr(rt, "NAME_SETTLE_S", 20.0)
        assert rt._settled_names(tid) == {tid[0]: "dds.asyn.9.9"}
    end.set()
    t.join()
    # a thread that keeps its inherited name (rclpy's own) costs the whole wait, and then it ends
    # (a generous bound: the wait's end is not a figure measured here)
    t0 = time.monotonic()
    me = threading.get_native_id()
    assert rt._settled_names([me]) == {me: rt._thread_name(me)}
    assert rt.NAME_SETTLE_S <= time.monotonic() - t0 < rt.NAME_SETTLE_S + 10
