"""Waiting on a few subscriptions outside any executor (the data paths of bridge and client).

rclpy's executors rebuild a wait set over every entity of every node in Python on each wait,
holding the GIL all the while; on the request/response path that cost, and the thread handoffs
it forces, were most of the bridge's overhead. The data paths therefore keep their
subscriptions on a node no executor spins, and the one thread that needs a message waits for
it here (the pattern of ``rclpy.wait_for_message``) and takes it itself.
"""
from __future__ import annotations

import contextlib
from typing import Optional, Sequence

from rclpy.exceptions import InvalidHandle
from rclpy.guard_condition import GuardCondition
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy


class SubscriptionWaiter:
    """Blocks until one of some subscriptions has a message, or :meth:`wake` is called.

    Thread safety: :meth:`wait` from one thread at a time; :meth:`wake` from any thread.
    """

    def __init__(self, context) -> None:
        self._context = context
        self._guard = GuardCondition(None, None, context=context)

    def wake(self) -> None:
        """Make a current or the next :meth:`wait` return at once."""
        try:
            self._guard.trigger()
        except InvalidHandle:
            pass

    def wait(self, subs: Sequence, timeout_sec: Optional[float]) -> list:
        """The subscriptions of ``subs`` that have a message (possibly none: woken or timed out).

        :param timeout_sec: ``None`` waits until a message or a wake; ``0`` only polls.
        """
        timeout_ns = -1 if timeout_sec is None else max(0, int(timeout_sec * 1e9))
        with contextlib.ExitStack() as stack:
            live = []
            for s in subs:
                try:
                    stack.enter_context(s.handle)
                    live.append(s)
                except InvalidHandle:
                    continue
            stack.enter_context(self._guard.handle)
            stack.enter_context(self._context.handle)
            ws = _rclpy.WaitSet(len(live), 1, 0, 0, 0, 0, self._context.handle)
            ws.clear_entities()
            for s in live:
                ws.add_subscription(s.handle)
            ws.add_guard_condition(self._guard.handle)
            ws.wait(timeout_ns)  # releases the GIL while blocked
            ready = set(ws.get_ready_entities("subscription"))
        return [s for s in live if s.handle.pointer in ready]

    def destroy(self) -> None:
        self._guard.destroy()


def take(sub):
    """The next message of ``sub``, or ``None``."""
    try:
        with sub.handle:
            info = sub.handle.take_message(sub.msg_type, sub.raw)
    except InvalidHandle:
        return None
    return None if info is None else info[0]
