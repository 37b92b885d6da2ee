"""PiCAS's priority-driven executor over several threads: one executor, one pool of callbacks.

:class:`MultiThreadedPicasExecutor` is the multi-threaded counterpart of
:class:`paam.ros.PicasExecutor`, in the manner of the priority-driven multi-threaded executor of
Sobhani, Choi and Kim (RTAS 2023), which the PAAM paper's MT configuration runs: ``num_threads``
threads share every callback of the executor's nodes, and whenever a thread is free it runs the
highest-priority callback that is ready, FIFO among equal priorities, exactly as the
single-threaded executor picks. Callback groups are rclpy's: the callbacks of a mutually
exclusive group (every node's default) never run at the same time, those of a reentrant group
may. Callbacks are not preempted: a callback that becomes ready while every thread is busy
waits for the first thread to finish, whatever its priority (the blocking the paper's MT case
shows).

How it works. The threads take turns at the single-threaded executor's pick (one lock): the
thread holding it waits for work if there is none, chooses the best candidate, marks it taken so
no other thread chooses it, lets go of the lock and runs the callback on itself. A thread that
finishes a callback queues for the lock again; rclpy's handler triggers the executor's guard
condition when it has taken its message and again when it is done, which wakes a thread waiting
for work. Two callbacks of one mutually exclusive group chosen by two threads at nearly the same
moment: rclpy's handler lets only one of them start; the other gives its entity back unread
(nothing is lost) and it is picked again once the group is free.

Where a callback awaits an accelerator request (:func:`paam.ros.await_result`), a waiter thread
collects the result at once (the single-threaded executor collects it on its own thread when it
can; with several threads picking, the hand-over is kept simple). With
``awaiting_holds_priority`` a suspended callback keeps lower-priority callbacks from starting on
every thread.

Priority floors (``priority_floors``, :meth:`set_thread_floor`): a thread with a floor runs only
callbacks at or above it, so it is free when such a callback becomes ready unless another one
of them holds it; lower callbacks wait for the threads without a floor. This takes back the
blocking above for the callbacks it covers, at the cost of fewer threads for the rest. A thread
with a floor waits for work only while no thread without a lower floor (or with none) is free
to wait: one that becomes free wakes it and takes over the wait.

Real-time settings: :meth:`set_executor_priority_cpus` gives every thread the same priority
(SCHED_FIFO where permitted, else the nice fallback of :mod:`paam.ros.rt`) and pins thread ``i``
to ``cpus[i % len(cpus)]``; :meth:`spin_rt` applies them in each thread and reports them.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Callable, Optional, Sequence

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.exceptions import InvalidHandle
from rclpy.executors import TimeoutObject

from paam.ros.executor import AcceleratorFuture, PicasExecutor, _say, _started
from paam.ros.rt import MODES as RT_MODES
from paam.ros.rt import RtReport, apply_rt

__all__ = ["MultiThreadedPicasExecutor"]


def _seconds(timeout_sec) -> Optional[float]:
    """A timeout as seconds: None (or negative) is no limit."""
    if isinstance(timeout_sec, TimeoutObject):
        timeout_sec = timeout_sec.timeout
    if timeout_sec is None or timeout_sec < 0:
        return None
    return float(timeout_sec)


class MultiThreadedPicasExecutor(PicasExecutor):
    """Priority-driven executor whose ``num_threads`` threads share all its callbacks.

    :param num_threads: threads that :meth:`spin` runs (default: the CPUs this process may run
        on, as ``os.sched_getaffinity`` says; at least 1).
    :param priority_floors: per thread of :meth:`spin` (``num_threads`` entries), the lowest
        callback priority it runs, or None for any; at least one entry must be None, else the
        callbacks below every floor would never run. Default: no floors. Threads that call
        :meth:`spin_once` themselves set theirs with :meth:`set_thread_floor`. Floors need
        ``callback_priority``.
    The other parameters are :class:`paam.ros.PicasExecutor`'s.

    :meth:`spin` and :meth:`spin_rt` run the threads (the calling one is the first) until the
    executor or its context is shut down; :meth:`spin_until_future_complete` until the future
    is done too. :meth:`spin_once` runs one callback on the calling thread, and may be called
    from several threads at once (each then is one of the executor's threads).
    An exception raised by a callback stops every thread and is raised from ``spin``.

    :Example:
        >>> executor = MultiThreadedPicasExecutor(num_threads=4)
        >>> executor.add_node(node)
        >>> executor.set_callback_priority(hot_sub, 20)
        >>> executor.set_executor_priority_cpus(80, [2, 3, 4, 5])
        >>> executor.spin_rt()
    """

    def __init__(self, num_threads: Optional[int] = None, *, context=None,
                 default_priority: int = 0, callback_priority: bool = True,
                 awaiting_holds_priority: bool = False, lean_wait: bool = True,
                 priority_floors: Optional[Sequence[Optional[int]]] = None) -> None:
        super().__init__(context=context, default_priority=default_priority,
                         callback_priority=callback_priority,
                         awaiting_holds_priority=awaiting_holds_priority, lean_wait=lean_wait)
        if num_threads is None:
            num_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
                else (os.cpu_count() or 1)
        if int(num_threads) < 1:
            raise ValueError(f"num_threads must be at least 1, not {num_threads}")
        self._num_threads = int(num_threads)
        self._floors: list[Optional[int]] = [None] * self._num_threads
        if priority_floors is not None:
            floors = [None if f is None else int(f) for f in priority_floors]
            if len(floors) != self._num_threads:
                raise ValueError(f"priority_floors: {len(floors)} entries for "
                                 f"{self._num_threads} threads")
            if None not in floors:
                raise ValueError("priority_floors: at least one thread must have no floor (None)"
                                 ", else the callbacks below every floor never run")
            if not callback_priority and any(f is not None for f in floors):
                raise ValueError("priority_floors need callback_priority=True")
            self._floors = floors
        self._local = threading.local()  # .floor: the calling thread's priority floor
        # One thread at a time leads: it waits for work and picks; the pick is then marked
        # taken. Among the threads queued to lead, one with the lowest floor (None lowest) goes
        # first; _lead guards _leader_key and _queued (thread ident -> its floor's key).
        self._lead = threading.Condition(threading.Lock())
        self._leader_key: Optional[float] = None
        self._queued: dict[int, float] = {}
        self._taken: set = set()
        # mutually exclusive group -> the task picked for it whose handler has not begun yet
        self._claims: dict = {}
        self._rt_cpus: Optional[list[int]] = None
        self.rt_reports: list[RtReport] = []

    @property
    def num_threads(self) -> int:
        return self._num_threads

    @property
    def priority_floors(self) -> list[Optional[int]]:
        """The floors of :meth:`spin`'s threads (see the constructor)."""
        return list(self._floors)

    def set_thread_floor(self, floor: Optional[int]) -> None:
        """From now on the calling thread runs only callbacks of priority ``floor`` or above
        (None: any), in :meth:`spin_once`; for threads that spin this executor themselves. Some
        thread without a floor must spin too, or the callbacks below every floor never run."""
        if floor is not None and not self._priority_enabled:
            raise ValueError("a priority floor needs callback_priority=True")
        self._local.floor = None if floor is None else int(floor)

    # -- real-time settings --------------------------------------------------------------------

    def set_executor_priority_cpus(self, rt_priority: Optional[int],
                                   cpus: Optional[Sequence[int]], *, mode: str = "auto",
                                   best_effort: bool = False) -> None:
        """Every thread at RT priority ``rt_priority``, thread ``i`` pinned to
        ``cpus[i % len(cpus)]`` (``None``: affinity left alone); applied by :meth:`spin_rt`.
        ``mode`` and ``best_effort`` as in :meth:`PicasExecutor.set_executor_priority_cpu`."""
        if mode not in RT_MODES:
            raise ValueError(f"mode must be one of {RT_MODES}, not {mode!r}")
        cpus = None if cpus is None else [int(c) for c in cpus]
        if cpus is not None and not cpus:
            raise ValueError("cpus: give at least one CPU, or None")
        self._rt_priority = rt_priority
        self._rt_cpus = cpus
        self._rt_cpu = None if cpus is None else cpus[0]
        self._rt_mode = mode
        self._rt_best_effort = bool(best_effort)

    def set_executor_priority_cpu(self, rt_priority: Optional[int], cpu: Optional[int], *,
                                  mode: str = "auto", best_effort: bool = False) -> None:
        """Every thread at ``rt_priority``, all pinned to the one CPU ``cpu``."""
        self.set_executor_priority_cpus(rt_priority, None if cpu is None else [cpu], mode=mode,
                                        best_effort=best_effort)

    def apply_rt_thread(self, index: int, *, log: Optional[Callable[[str], None]] = None
                        ) -> RtReport:
        """Apply the settings of :meth:`set_executor_priority_cpus` to the calling thread as
        thread ``index`` (its CPU ``cpus[index % len(cpus)]``); returns what it got."""
        cpu = None if self._rt_cpus is None else self._rt_cpus[index % len(self._rt_cpus)]
        return apply_rt(self._rt_priority, cpu, mode=self._rt_mode,
                        best_effort=self._rt_best_effort,
                        log=log if log is not None else (lambda _line: None))

    def spin_rt(self, *, log: Optional[Callable[[str], None]] = None) -> None:
        """Run the threads, each with the real-time settings applied first; one line per thread
        says what it got (``log``, else stderr), and a denied setting does not stop it."""
        self._run_threads(lambda: False, None, rt=True, log=log)

    # -- spinning ------------------------------------------------------------------------------

    def spin(self) -> None:
        self._run_threads(lambda: False, None)

    def spin_until_future_complete(self, future, timeout_sec=None) -> None:
        future.add_done_callback(lambda _f: self.wake())
        self._run_threads(future.done, _seconds(timeout_sec))

    def _run_threads(self, done: Callable[[], bool], timeout_sec: Optional[float], *,
                     rt: bool = False, log: Optional[Callable[[str], None]] = None) -> None:
        """``num_threads`` threads (this one first) pick and run callbacks until the executor
        or its context is shut down, ``done()`` holds, ``timeout_sec`` has passed or a
        callback raised (raised here once every thread has stopped)."""
        deadline = None if timeout_sec is None else time.monotonic() + timeout_sec
        stop = threading.Event()
        errors: list[BaseException] = []
        reports: list[Optional[RtReport]] = [None] * self._num_threads

        def finished() -> bool:
            return (stop.is_set() or done()
                    or (deadline is not None and time.monotonic() >= deadline))

        def worker(index: int) -> None:
            self._local.floor = self._floors[index]
            if rt:
                reports[index] = report = self.apply_rt_thread(index)
                if self._rt_priority is not None or self._rt_cpus is not None:
                    _say(f"MultiThreadedPicasExecutor thread {index} real-time settings: "
                         f"{report}", log)
            try:
                while self._context.ok() and not self._is_shutdown and not finished():
                    left = None if deadline is None else max(0.0, deadline - time.monotonic())
                    self._spin_once_impl(left, finished)
            except BaseException as exc:  # noqa: BLE001 - raised from spin() below
                errors.append(exc)
                stop.set()
                self._wake_waiter()

        threads = [threading.Thread(target=worker, args=(i,), daemon=True,
                                    name=f"picas-mt-{i}") for i in range(1, self._num_threads)]
        for t in threads:
            t.start()
        try:
            worker(0)
        finally:
            stop.set()
            self._wake_waiter()
            for t in threads:
                t.join()
            if rt:
                self.rt_reports = [r for r in reports if r is not None]
                self.rt_report = self.rt_reports[0] if self.rt_reports else None
        if errors:
            raise errors[0]

    def _wake_waiter(self) -> None:
        """Trigger the guard condition: the thread waiting for work looks again."""
        guard = self._guard
        if guard is not None:
            try:
                guard.trigger()
            except InvalidHandle:  # shut down already
                pass

    def _spin_once_impl(self, timeout_sec, condition: Callable[[], bool] = lambda: False) -> None:
        limit = _seconds(timeout_sec)
        floor = getattr(self._local, "floor", None)
        key = float("-inf") if floor is None else float(floor)
        if not self._acquire_lead(key, limit):
            return  # other threads waited for work all that time
        try:
            if not self._priority_enabled:
                # rclpy's order (its MultiThreadedExecutor's): the wait under the lock
                pick = self._pick_stock(timeout_sec, condition)
            elif floor is None:
                pick = self._pick(timeout_sec, condition)
            else:  # the wait ends when a thread of a lower floor (or none) queues to lead
                pick = self._pick(timeout_sec, lambda: condition() or self._outranked(key))
            if pick is None:
                return
            task, entity = pick[0]
            self._taken.add(task)
            group = None
            if entity is not None and not _started(task):
                group = entity.callback_group
                if isinstance(group, MutuallyExclusiveCallbackGroup):
                    self._claims[group] = task
        finally:
            self._release_lead()
        try:
            self._run_pick(*pick)
        finally:
            self._taken.discard(task)
            if group is not None and self._claims.get(group) is task:
                del self._claims[group]
            if not task.done():
                # A coroutine suspended at an await: a wake-up for its future may have come
                # while it was still marked taken, so the waiting thread looks again.
                self._wake_waiter()

    def _acquire_lead(self, key: float, limit: Optional[float]) -> bool:
        """Queue to lead (wait for work and pick) with the floor key ``key``; True once this
        thread leads, False after ``limit`` seconds (None: no limit). A leader with a higher
        floor is woken so that it gives the lead up."""
        me = threading.get_ident()
        with self._lead:
            self._queued[me] = key
            try:
                if self._leader_key is not None and key < self._leader_key:
                    self._wake_waiter()
                if not self._lead.wait_for(
                        lambda: self._leader_key is None and key <= min(self._queued.values()),
                        timeout=limit):
                    return False
                self._leader_key = key
                return True
            finally:
                del self._queued[me]

    def _release_lead(self) -> None:
        with self._lead:
            self._leader_key = None
            self._lead.notify_all()

    def _outranked(self, key: float) -> bool:
        """Whether a thread with a lower floor than ``key`` (or none) queues to lead."""
        return any(k < key for k in list(self._queued.values()))

    def _held_priority(self, pending) -> Optional[int]:
        """The awaiting callbacks' held priority, raised to the calling thread's floor."""
        held = super()._held_priority(pending)
        floor = getattr(self._local, "floor", None)
        if floor is None:
            return held
        return floor if held is None else max(held, floor)

    def _pick_stock(self, timeout_sec, condition):
        from rclpy.executors import (ConditionReachedException, ShutdownException,
                                     TimeoutException)
        try:
            handler, entity, _node = self.wait_for_ready_callbacks(timeout_sec, None, condition)
        except (ShutdownException, TimeoutException, ConditionReachedException):
            return None
        return (handler, entity), self.callback_priority(entity)  # (None: default_priority)

    def _candidates(self, pending, floor):
        """The single-threaded executor's candidates, less handlers whose mutually exclusive
        group is busy (another thread runs or has just picked one of its callbacks): they wait,
        keeping their place in FIFO order, instead of being run to give their entity back."""
        out = []
        claims = self._claims
        for task, entity in super()._candidates(pending, floor):
            if entity is not None and not _started(task):
                group = entity.callback_group
                claim = claims.get(group)
                if (claim is not None and claim is not task and not claim.done()
                        and not claim.executing() and not _started(claim)):
                    continue  # picked by another thread, its handler not begun yet
                if not group.can_execute(entity):
                    continue
            out.append((task, entity))
        return out

    def _refresh_once(self, timeout_sec, condition):
        """The wait also ends once a handler held by a busy group may run: rclpy's handler
        triggers the guard condition when its callback ends, and the wait, which would
        otherwise wait again after a wake-up without new work, checks for it."""
        pending = self._pending_entries()
        if self._candidates(pending, self._held_priority(pending)):
            return super()._refresh_once(timeout_sec, condition)  # a poll: work is in hand

        def freed() -> bool:
            if condition():
                return True
            pending = self._pending_entries()
            return bool(self._candidates(pending, self._held_priority(pending)))
        return super()._refresh_once(timeout_sec, freed)

    def _pending_entries(self):
        taken = self._taken
        return [(t, e) for t, e in super()._pending_entries() if t not in taken]

    def collect_later(self, future: AcceleratorFuture) -> None:
        """A waiter thread collects the result at once (see the module docstring)."""
        future.ensure_waiter()

