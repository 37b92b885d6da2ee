"""Awaiting an accelerator request inside an rclpy coroutine callback (:func:`await_result`),
and what :class:`paam.ros.PicasExecutor` needs to see which callbacks are suspended on what.

``await await_result(client.submit(...))`` turns a :class:`paam.Future` into an rclpy Future
(:class:`AcceleratorFuture`) whose result is collected either by the executor that runs the
callback, in its own thread, or by a waiter thread that then wakes the executor.
"""
from __future__ import annotations

import concurrent.futures
import inspect
import threading
from typing import Optional

from rclpy.task import Future, Task

__all__ = ["AcceleratorFuture", "await_result"]

# What runs in this thread now: ``.callback`` is (the PicasExecutor, the callback's priority) or
# None; ``.steps`` the executors whose callbacks this thread is running. Tasks a callback
# creates inherit its priority; await_result leaves that executor the collection of the result.
running_in = threading.local()

# The generator behind ``await future`` in rclpy; lets us see which Future a suspended coroutine
# callback waits for.
_FUTURE_AWAIT_CODE = Future.__await__.__code__


def started(task: Task) -> bool:
    """True for a coroutine task that ran and is suspended at an ``await``."""
    coro = task._handler
    return (inspect.iscoroutine(coro)
            and inspect.getcoroutinestate(coro) == inspect.CORO_SUSPENDED)


def awaited_future(coro) -> Optional[Future]:
    """Follow a suspended coroutine's await chain down to the rclpy Future it waits on."""
    obj = coro
    for _ in range(64):  # bounded: await chains are short
        if obj is None:
            return None
        if inspect.isgenerator(obj):
            if obj.gi_code is _FUTURE_AWAIT_CODE and obj.gi_frame is not None:
                fut = obj.gi_frame.f_locals.get("self")
                return fut if isinstance(fut, Future) else None
            obj = obj.gi_yieldfrom
        else:
            obj = getattr(obj, "cr_await", None)
    return None


_waiters: Optional[concurrent.futures.ThreadPoolExecutor] = None
_waiters_lock = threading.Lock()


def _waiter_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _waiters
    with _waiters_lock:
        if _waiters is None:
            _waiters = concurrent.futures.ThreadPoolExecutor(
                max_workers=32, thread_name_prefix="paam-await")
        return _waiters


class AcceleratorFuture(Future):
    """:func:`await_result`'s rclpy Future. Its request's result is collected either by the
    executor's thread (:meth:`collect_if_done`, while no waiter thread has it) or by one waiter
    thread (:meth:`ensure_waiter`), never by both."""

    def __init__(self, paam_future, timeout_sec: Optional[float] = None) -> None:
        super().__init__()
        self._paam = paam_future
        self._timeout_sec = timeout_sec
        self._claim = threading.Lock()
        self._waiter = False

    def collect_if_done(self) -> bool:
        """True if done; collects the result here if the request is done and no waiter has it."""
        with self._claim:
            if self._waiter or self.done():
                return self.done()
            ready = getattr(self._paam, "done", None)
            if ready is None or not ready():
                return False
            self._deliver()
            return True

    def ensure_waiter(self) -> None:
        """Hand the request to a waiter thread (once), unless it was collected already."""
        with self._claim:
            if self._waiter or self.done():
                return
            self._waiter = True
        _waiter_pool().submit(self._deliver)

    def _deliver(self) -> None:
        try:
            self.set_result(self._paam.result(timeout_sec=self._timeout_sec))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            self.set_exception(exc)


def await_result(paam_future, *, timeout_sec: Optional[float] = None) -> AcceleratorFuture:
    """An rclpy Future that completes with ``paam_future``'s result (or exception).

    ``await await_result(client.submit(...))`` inside an ``async def`` callback lets the executor
    run other callbacks until the accelerator is done; :class:`PicasExecutor` resumes the callback
    (at its priority) once the result is in, and with ``awaiting_holds_priority`` starts nothing
    of a lower priority meanwhile.

    Who collects the result: called from a callback that a :class:`PicasExecutor` runs, that
    executor does, in its own thread, when it next looks and the request is done (no thread
    hand-over on the way back); only before it would sleep does it hand the request to a waiter
    thread, which then wakes it. Called anywhere else, a waiter thread blocks in
    ``paam_future.result`` at once. ``timeout_sec`` is the waiter's.
    """
    out = AcceleratorFuture(paam_future, timeout_sec)
    running = getattr(running_in, "callback", None)
    if running is None:
        out.ensure_waiter()
    else:
        running[0].collect_later(out)
    return out
