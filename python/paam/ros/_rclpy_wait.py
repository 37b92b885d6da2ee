"""The wait of :class:`paam.ros.PicasExecutor` over some of its entities, built from rclpy's
own parts, for ``PicasExecutor(lean_wait=False)`` (the default wait is
:class:`paam.ros._readiness.ReadinessScanner`'s)."""
from __future__ import annotations

import contextlib
from typing import Callable

from rclpy.exceptions import InvalidHandle
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

from paam.ros._readiness import wait_on


def wait_entities(executor, wanted: Callable[[object], bool], timeout_ns: int, *,
                  waitables_answer: bool = False, wake_guard: bool = False) -> bool:
    """Wait (``timeout_ns``: 0 polls, -1 has no limit) over ``executor``'s entities without a
    pending handler, free to start, that ``wanted`` takes, and with ``wake_guard`` the
    executor's own guard condition; True if one of the entities is ready. With
    ``waitables_answer`` a wanted waitable answers True at once (what
    :meth:`paam.ros._readiness.ReadinessScanner.poll` does with its own wait set)."""
    subs, timers, guards, clients, services = [], [], [], [], []
    for node in executor.get_nodes():
        for group, out in ((node.subscriptions, subs), (node.timers, timers),
                           (node.guards, guards), (node.clients, clients),
                           (node.services, services)):
            for e in group:
                # (an entity whose callback group is busy, e.g. with a callback suspended
                # in an await, cannot start: rclpy's wait leaves it out too)
                if (not e._executor_event and wanted(e)
                        and e.callback_group.can_execute(e)):
                    out.append(e)
        if waitables_answer:
            for w in node.waitables:
                if not w._executor_event and wanted(w):
                    return True
    if not (subs or timers or guards or clients or services or wake_guard):
        return False
    with contextlib.ExitStack() as stack:
        lists = []
        for group in (subs, timers, guards, clients, services):
            live = []
            for e in group:
                try:
                    stack.enter_context(e.handle)
                    live.append(e)
                except InvalidHandle:
                    pass
            lists.append(live)
        subs, timers, guards, clients, services = lists
        own = []
        if wake_guard:
            try:
                stack.enter_context(executor._guard.handle)
                own.append(executor._guard)
            except InvalidHandle:  # shut down
                return False
        stack.enter_context(executor._context.handle)
        ws = _rclpy.WaitSet(len(subs), len(guards) + len(own), len(timers), len(clients),
                            len(services), 0, executor._context.handle)
        ws.clear_entities()
        for e in subs:
            ws.add_subscription(e.handle)
        for e in guards + own:
            ws.add_guard_condition(e.handle)
        for e in timers:
            ws.add_timer(e.handle)
        for e in clients:
            ws.add_client(e.handle)
        for e in services:
            ws.add_service(e.handle)
        wait_on(ws, timeout_ns)  # (a poll with the least timer slack: wait_on says why)
        found = False
        ready = set(ws.get_ready_entities("guard_condition"))
        for gc in guards:
            if gc.handle.pointer in ready:
                # The wait consumed the trigger; rclpy re-triggers guards so marked.
                gc._executor_triggered = True
                found = True
        if found:
            return True
        ready = set(ws.get_ready_entities("timer"))
        if any(t.handle.pointer in ready and t.handle.is_timer_ready() for t in timers):
            return True
        for kind, group in (("subscription", subs), ("client", clients),
                            ("service", services)):
            ready = set(ws.get_ready_entities(kind))
            if any(e.handle.pointer in ready for e in group):
                return True
    return False
