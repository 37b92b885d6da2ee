"""PiCAS's priority-driven executor for rclpy.

:class:`PicasExecutor` is a single-threaded rclpy executor with PiCAS semantics (Choi, Xiang, Kim,
RTAS 2021):

* every timer, subscription, service, client, guard condition and waitable can be given a
  callback priority (:meth:`PicasExecutor.set_callback_priority`), or inherit one from its chain
  (:meth:`PicasExecutor.add_chain`, PiCAS Algorithm 1); larger is more critical;
* each time the executor picks work it re-polls readiness and runs the highest-priority ready
  callback, FIFO among equal priorities (by the wait in which the executor first saw it ready,
  then by the order the nodes were added);
  never the stock executor's sweep over everything that was ready at one wait in type order
  (timers, subscriptions, guards, clients, services);
* a task created while a callback runs — notably rclpy's done-callbacks of a client's
  ``call_async`` future, which it creates when it handles the client's response — inherits that
  callback's priority, so a response is handled at its client's priority;
* :meth:`PicasExecutor.set_executor_priority_cpu` then :meth:`PicasExecutor.spin_rt` run the
  executor's thread under SCHED_FIFO pinned to one CPU when permitted, under a nice value derived
  from the priority where SCHED_FIFO is refused (:mod:`paam.ros.rt`), and report what it got.

How it works. A wait makes a handler task per ready entity with rclpy's ``_make_handler``
(marking the entity so it is not waited on again until its handler runs); unfinished tasks stay in
``Executor._tasks``. The stock executor consumes Jazzy's ``_wait_for_ready_callbacks`` generator
one handler per ``spin_once`` and only waits again once it is exhausted. This executor waits on
every pick (with a zero timeout when handlers are already pending, so new arrivals are seen
without blocking), then runs the best candidate. It waits with
:class:`paam.ros._readiness.ReadinessScanner`, which keeps the entity lists and one wait set
between waits (``lean_wait=False``: through ``_wait_for_ready_callbacks``, which rebuilds both in
Python each time). The rclpy internals used are those the scanner names, ``_tasks``/
``_tasks_lock`` and ``_wait_for_ready_callbacks``; all are stable across Jazzy releases (rclpy 7.1).

Coroutine callbacks (``async def``) that are suspended on an rclpy Future are candidates again only
once that Future is done; the executor wakes itself when it completes, even from another thread.
With ``awaiting_holds_priority``, a callback suspended on an accelerator request
(:func:`paam.ros.await_result`) keeps callbacks of lower priority from starting until it resumes,
as a synchronous request would, while callbacks of its priority or above run in the meantime: the
analysis's one blocking callback of a less critical chain per instance still holds, and the
accelerator time no longer holds the executor's more critical work. A request awaited in a callback
this executor runs is collected by the executor's own thread once it is done (no hand-over to
another thread on the way back); only before a wait that may sleep is it handed to a waiter
thread, which then wakes the executor.

:func:`await_result` and the look into suspended coroutines live in :mod:`paam.ros._awaiting`;
the wait of ``lean_wait=False`` in :mod:`paam.ros._rclpy_wait`.

Thread safety: like ``SingleThreadedExecutor``, spin from one thread at a time.
:meth:`set_callback_priority` may be called from any thread (an attribute store).
"""
from __future__ import annotations

import itertools
import threading
import time
import weakref
from typing import Callable, Optional

from rclpy.executors import (ConditionReachedException, Executor, ShutdownException,
                             TimeoutException, TimeoutObject)
from rclpy.task import Future, Task

from paam.ros._awaiting import AcceleratorFuture, await_result
from paam.ros._awaiting import awaited_future as _awaited_future
from paam.ros._awaiting import running_in as _running_in
from paam.ros._awaiting import started as _started
from paam.ros._rclpy_wait import wait_entities as rclpy_wait_entities
from paam.ros._readiness import ReadinessScanner
from paam.ros.rt import MODES as RT_MODES
from paam.ros.rt import RtReport, apply_rt, restore_timer_slack, tighten_timer_slack

__all__ = ["PicasExecutor", "PickStats", "await_result", "AcceleratorFuture"]

_PRIORITY_ATTR = "_paam_callback_priority"


class PickStats:
    """Counters of the executor's own work, for benchmarks (not thread-safe; read after spin).

    ``choose_ns``: finding the highest-priority candidate. ``poll_ns``: the zero-timeout poll of
    the entities that could outrank it. ``refresh_ns``: full re-polls (a wait over every entity
    free to start; when nothing was pending this includes blocking for work).
    ``refreshes``: how many of those. ``picks``: callbacks run.
    """

    __slots__ = ("picks", "refreshes", "refresh_ns", "poll_ns", "choose_ns", "max_candidates")

    def __init__(self) -> None:
        self.picks = 0
        self.refreshes = 0
        self.refresh_ns = 0
        self.poll_ns = 0
        self.choose_ns = 0
        self.max_candidates = 0

    def __repr__(self) -> str:
        return (f"PickStats(picks={self.picks}, refreshes={self.refreshes}, "
                f"refresh_ns={self.refresh_ns}, poll_ns={self.poll_ns}, "
                f"choose_ns={self.choose_ns}, max_candidates={self.max_candidates})")


class PicasExecutor(Executor):
    """Single-threaded executor that always runs the highest-priority ready callback.

    :param context: the rclpy context, or ``None`` for the default one.
    :param default_priority: callback priority of entities never given one, and of tasks created
        with :meth:`create_task` outside a callback of this executor. Default 0. A task created
        while one of its callbacks runs (rclpy's done-callbacks of a client's future, created
        when the client's response is handled, or a callback's own ``create_task``) inherits
        that callback's priority.
    :param callback_priority: start with priority scheduling enabled (PiCAS's
        ``enable_callback_priority``); when disabled the executor behaves exactly like rclpy's
        ``SingleThreadedExecutor``.
    :param awaiting_holds_priority: while a coroutine callback is suspended on an accelerator
        request (``await await_result(...)``), start no callback of a lower priority; callbacks
        of its priority or above may run meanwhile. Default False: any ready callback may run
        while one awaits.
    :param lean_wait: wait for work with :class:`paam.ros._readiness.ReadinessScanner`, which
        keeps the entity lists and the wait set between waits, instead of rclpy's
        ``_wait_for_ready_callbacks``, which rebuilds both in Python at every wait (default
        True; the handlers and what they run are rclpy's either way).

    :Example:
        >>> executor = PicasExecutor()
        >>> executor.add_node(node)
        >>> executor.set_callback_priority(high_timer, 20)
        >>> executor.set_callback_priority(low_sub, 10)
        >>> executor.set_executor_priority_cpu(80, 1)
        >>> executor.spin_rt()
    """

    def __init__(self, *, context=None, default_priority: int = 0,
                 callback_priority: bool = True, awaiting_holds_priority: bool = False,
                 lean_wait: bool = True) -> None:
        # Set by wake(), which rclpy calls whenever a node of this executor creates or destroys
        # an entity: the scanner then checks its copy of the entity lists (_readiness).
        self._entities_changed = True
        super().__init__(context=context)
        self._scanner = ReadinessScanner(self) if lean_wait else None
        self.default_priority = int(default_priority)
        self._priority_enabled = bool(callback_priority)
        self.awaiting_holds_priority = bool(awaiting_holds_priority)
        # First time each task was seen ready: FIFO among equal priorities.
        self._first_seen: "weakref.WeakKeyDictionary[Task, int]" = weakref.WeakKeyDictionary()
        self._seq = itertools.count()
        # When each node was added: get_nodes() in that order (rclpy keeps them in a set), kept
        # sorted until a node is added or removed.
        self._node_rank: "weakref.WeakKeyDictionary[object, int]" = weakref.WeakKeyDictionary()
        self._node_seq = itertools.count()
        self._nodes_in_order: Optional[list] = None
        # Futures we already asked to wake us when done (ids of live futures).
        self._hooked: "weakref.WeakSet[Future]" = weakref.WeakSet()
        self._rt_priority: Optional[int] = None
        self._rt_cpu: Optional[int] = None
        self._rt_mode = "auto"
        self._rt_best_effort = False
        self._chains: list = []
        self.rt_report: Optional[RtReport] = None
        self.stats = PickStats()
        # Called with (entity, priority) just before each callback runs; tests and tracing.
        self.on_pick: Optional[Callable[[object, int], None]] = None
        # await_result's futures this executor collects itself, unless it must sleep first
        self._uncollected: list[AcceleratorFuture] = []
        # Callbacks running now (a task's step on a spinning thread), so that shutdown() waits
        # for them: Jazzy's Executor.shutdown does not wait at all (see shutdown()).
        self._stepping = 0
        self._stepping_cond = threading.Condition()

    # -- PiCAS API -----------------------------------------------------------------------------

    def enable_callback_priority(self) -> None:
        """Choose by callback priority (the default)."""
        self._priority_enabled = True

    def disable_callback_priority(self) -> None:
        """Behave like rclpy's SingleThreadedExecutor."""
        self._priority_enabled = False

    @property
    def callback_priority_enabled(self) -> bool:
        return self._priority_enabled

    def set_callback_priority(self, entity: object, priority: int) -> None:
        """Give a timer, subscription, service, client, guard condition or waitable a priority.

        Larger is more critical. Takes effect at the executor's next pick. Like PiCAS's
        ``callback_priority`` field, the priority is stored on the entity itself.
        """
        setattr(entity, _PRIORITY_ATTR, int(priority))

    def callback_priority(self, entity: object) -> int:
        """The priority the executor uses for ``entity`` (``default_priority`` if none set);
        also for a task from :meth:`create_task`."""
        return getattr(entity, _PRIORITY_ATTR, self.default_priority)

    def add_node(self, node) -> bool:
        """rclpy's ``add_node``; the executor also notes when, for :meth:`get_nodes`."""
        if node not in self._node_rank:
            self._node_rank[node] = next(self._node_seq)
        self._nodes_in_order = None
        added = super().add_node(node)
        self._entities_changed = True
        return added

    def remove_node(self, node) -> None:
        super().remove_node(node)
        self._node_rank.pop(node, None)
        self._nodes_in_order = None
        self._entities_changed = True

    def wake(self) -> None:
        """rclpy's ``wake``: nodes call it when they create or destroy an entity, so the
        executor's own wait also looks at the nodes' entities again."""
        self._entities_changed = True
        super().wake()

    def get_nodes(self) -> list:
        """The nodes in the order they were added. rclpy keeps them in a set, whose order
        follows the nodes' addresses and so differs from run to run; both waits make handlers
        node by node in this order, and equal priorities seen ready in one wait run in the
        order their handlers were made. So with rclpy's order, which of two callbacks of equal
        priority on different nodes ran first could change from one run to the next (case
        study 2's two lidar timers: H100, 2026-11-24, docs/evaluation.md)."""
        with self._nodes_lock:
            nodes = self._nodes_in_order
            # (add_node clears the cache before rclpy adds the node: a get_nodes in between
            # caches the old set, which the length shows)
            if nodes is None or len(nodes) != len(self._nodes):
                rank = self._node_rank
                nodes = self._nodes_in_order = sorted(self._nodes,
                                                      key=lambda n: rank.get(n, 1 << 62))
            return list(nodes)

    def create_task(self, callback, *args, **kwargs) -> Task:
        """rclpy's ``create_task``; called from a callback this executor is running, the task
        gets that callback's priority (rclpy's done-callbacks of a future, for example)."""
        task = super().create_task(callback, *args, **kwargs)
        running = getattr(_running_in, "callback", None)
        if running is not None and running[0] is self:
            setattr(task, _PRIORITY_ATTR, running[1])
        return task

    def add_chain(self, chain, entities: "dict[str, object] | None" = None) -> "dict[str, int]":
        """Let the callbacks of a :class:`paam.ros.Chain` inherit priorities from it.

        ``entities`` maps callback names to rclpy entities (those bound with ``chain.bind`` are
        used otherwise). Callback priorities of all chains added to this executor are recomputed
        with PiCAS Algorithm 1 (chains by ascending chain priority, callbacks in chain order,
        priorities 1, 2, 3, ...), so a callback of a more critical chain always wins, and within a
        chain a later stage wins. Returns the callback-name → priority map of ``chain``.
        """
        from paam.ros.helpers import picas_callback_priorities
        if entities:
            for name, entity in entities.items():
                chain.bind(name, entity)
        if chain not in self._chains:
            self._chains.append(chain)
        table = picas_callback_priorities(self._chains)
        for c in self._chains:
            for name, entity in c.bound_entities().items():
                self.set_callback_priority(entity, table[(c.name, name)])
        return {name: table[(chain.name, name)] for name in chain.callback_names}

    @property
    def chains(self) -> tuple:
        """The :class:`paam.ros.Chain` objects added with :meth:`add_chain`, in that order."""
        return tuple(self._chains)

    def set_executor_priority_cpu(self, rt_priority: Optional[int], cpu: Optional[int], *,
                                  mode: str = "auto", best_effort: bool = False) -> None:
        """Ask for RT priority ``rt_priority`` and affinity to ``cpu`` for the spinning thread.

        Applied by :meth:`spin_rt` (or :meth:`apply_rt`) in the thread that spins; ``None`` leaves
        a knob alone. ``mode`` (:func:`paam.ros.rt.apply_rt`): ``auto`` is SCHED_FIFO where
        permitted, else the nice value of :func:`paam.ros.rt.nice_for`, else SCHED_OTHER;
        ``fifo``, ``nice``, ``none``. ``best_effort``: the executor serves only best-effort
        chains, so where SCHED_FIFO is denied it runs SCHED_IDLE instead of a nice value (it then
        yields at once to the critical executors on its core; :mod:`paam.ros.rt`). What was
        applied, and why not, is in :attr:`rt_report`.
        """
        if mode not in RT_MODES:
            raise ValueError(f"mode must be one of {RT_MODES}, not {mode!r}")
        self._rt_priority = rt_priority
        self._rt_cpu = cpu
        self._rt_mode = mode
        self._rt_best_effort = bool(best_effort)

    @property
    def rt_settings(self) -> "tuple[Optional[int], Optional[int]]":
        """(RT priority, CPU) that :meth:`spin_rt` applies; None: left alone."""
        return self._rt_priority, self._rt_cpu

    def apply_rt(self, *, mode: Optional[str] = None,
                 log: Optional[Callable[[str], None]] = None) -> RtReport:
        """Apply the settings of :meth:`set_executor_priority_cpu` to the calling thread.

        ``mode`` overrides the one given there. Writes no line unless ``log`` is given (the
        caller reports :attr:`rt_report`; :meth:`spin_rt` writes one line).
        """
        self.rt_report = apply_rt(self._rt_priority, self._rt_cpu,
                                  mode=mode or self._rt_mode,
                                  best_effort=self._rt_best_effort,
                                  log=log if log is not None else (lambda _line: None))
        return self.rt_report

    def spin_rt(self, *, log: Optional[Callable[[str], None]] = None) -> None:
        """Apply the real-time settings to the calling thread, report them in one line, and spin.

        :param log: where the line goes (a node logger's ``info``/``warning``); stderr when
            ``None``. A denied setting (SCHED_FIFO refused: the nice fallback; that refused too:
            SCHED_OTHER) is reported and the executor spins regardless.
        """
        report = self.apply_rt()
        if self._rt_priority is not None or self._rt_cpu is not None:
            _say(f"PicasExecutor real-time settings: {report}", log)
        self.spin()

    def shutdown(self, timeout_sec: Optional[float] = None) -> bool:
        """Stops the executor: no callback starts from now on, and it waits (at most
        ``timeout_sec``; forever if ``None`` or negative, not at all if 0) for the callback
        running on a spinning thread to return. True if none runs any more (apart from the
        caller's own, when a callback shuts its executor down); False on timeout, and then the
        executor is stopped but keeps its nodes and guard condition until a later call returns
        True. A coroutine callback suspended on an ``await`` is not running: it is abandoned,
        since nothing spins to resume it.

        rclpy's documented contract, which Jazzy's ``Executor.shutdown`` (rclpy 7.1) does not
        keep: it tests its shutdown flag right after setting it, so it never waits, and then
        destroys the guard condition under a callback still running. Its own wait, when it
        works, counts suspended coroutines too, so it would hang on one forever."""
        with self._shutdown_lock:
            if not self._is_shutdown:
                self._is_shutdown = True
                if self._guard is not None:
                    self._guard.trigger()
        own = getattr(_running_in, "steps", ()).count(self)  # this thread's own callbacks
        if timeout_sec is not None and timeout_sec < 0:
            timeout_sec = None
        with self._stepping_cond:
            if not self._stepping_cond.wait_for(lambda: self._stepping <= own, timeout_sec):
                return False
        super().shutdown(0)  # the flag is set: rclpy's part is the clean-up
        if self._scanner is not None:
            self._scanner.close()  # the executor's own wait lets go of the nodes it kept
        return True

    def _begin_step(self) -> bool:
        """Before running a picked callback: False (run nothing) once shutdown() has begun;
        else counts it, so that shutdown() waits for it, until :meth:`_end_step`."""
        with self._stepping_cond:
            if self._is_shutdown:
                return False
            self._stepping += 1
        _running_in.steps = getattr(_running_in, "steps", ()) + (self,)
        return True

    def _end_step(self) -> None:
        _running_in.steps = _running_in.steps[:-1]
        with self._stepping_cond:
            self._stepping -= 1
            self._stepping_cond.notify_all()

    # -- spinning ------------------------------------------------------------------------------

    def spin_once(self, timeout_sec: Optional[float] = None) -> None:
        """Wait for work (at most ``timeout_sec``; forever if ``None``) and run one callback."""
        self._spin_once_impl(timeout_sec)

    def spin_once_until_future_complete(self, future: Future, timeout_sec=None) -> None:
        future.add_done_callback(lambda _: self.wake())
        self._spin_once_impl(timeout_sec, future.done)

    def _spin_once_impl(self, timeout_sec, condition: Callable[[], bool] = lambda: False) -> None:
        if not self._priority_enabled:
            self._spin_once_stock(timeout_sec, condition)
            return
        pick = self._pick(timeout_sec, condition)
        if pick is not None:
            self._run_pick(*pick)

    def _pick(self, timeout_sec, condition: Callable[[], bool]):
        """Wait for work (at most ``timeout_sec``) and choose the callback to run next:
        ``((task, entity), priority)``, or None when there is none (or ``condition`` holds)."""
        if condition():
            return None
        st = self.stats
        t0 = time.perf_counter_ns()
        pending = self._pending_entries()
        floor = self._held_priority(pending)
        candidates = self._candidates(pending, floor)
        best, best_key = self._best(candidates)
        t1 = time.perf_counter_ns()
        st.choose_ns += t1 - t0
        # Fresh readiness matters only for work that could outrank the best candidate already in
        # hand: if no entity of a higher priority (without a pending handler) is ready now, a full
        # re-poll cannot change the choice (an equal one newly seen would come later in FIFO
        # order), so run it straight away. That check polls just those entities; rclpy's full
        # re-poll rebuilds a wait set over every entity in Python and costs more.
        if best is not None:
            outranked = self._outranking_work_ready(best_key[0])
            t0 = time.perf_counter_ns()
            st.poll_ns += t0 - t1
            t1 = t0
        if best is None and floor is not None:
            # Wait for work at or above it. Woken by an awaited request that is done, run its
            # callback on (unless something outranks it) without rclpy's full re-poll, which
            # costs more than the rest of the resumption.
            self._wait_held(floor, timeout_sec)
            pending = self._pending_entries()
            candidates = self._candidates(pending, self._held_priority(pending))
            best, best_key = self._best(candidates)
            outranked = best is not None and self._outranking_work_ready(best_key[0])
            timeout_sec = 0.0
        if best is None or outranked:
            candidates = self._refresh(timeout_sec, condition)
            t2 = time.perf_counter_ns()
            st.refresh_ns += t2 - t1
            if not candidates:
                return None
            best, best_key = self._best(candidates)
            st.choose_ns += time.perf_counter_ns() - t2
        st.picks += 1
        if len(candidates) > st.max_candidates:
            st.max_candidates = len(candidates)
        return best, best_key[0]

    def _run_pick(self, best: "tuple[Task, object]", priority: int) -> None:
        """Run the picked callback on this thread (unless shutdown() has begun meanwhile), at
        ``priority``; raises what it raised."""
        if not self._begin_step():  # shut down meanwhile: the pick is dropped
            return
        task, entity = best
        outer, _running_in.callback = getattr(_running_in, "callback", None), (self, priority)
        try:
            if self.on_pick is not None:
                self.on_pick(entity, priority)
            task()
        finally:
            _running_in.callback = outer
            self._end_step()
        if task.exception() is not None:
            raise task.exception()
        task.result()

    def _candidates(self, pending, floor: Optional[int]) -> "list[tuple[Task, object]]":
        """The runnable ones of ``pending`` that ``floor``, the priority held by awaiting
        callbacks (:meth:`_held_priority`), lets start or resume."""
        return [(t, e) for t, e in pending if self._runnable(t)
                and (floor is None or self.callback_priority(t if e is None else e) >= floor)]

    def _held_priority(self, pending) -> Optional[int]:
        """With ``awaiting_holds_priority``: the highest priority among callbacks suspended on
        an accelerator request that is not done; None when there is none."""
        if not self.awaiting_holds_priority:
            return None
        held = None
        for task, entity in pending:
            if not _started(task):
                continue
            awaited = _awaited_future(task._handler)
            if (not isinstance(awaited, AcceleratorFuture) or awaited.done()
                    or awaited.cancelled()):
                continue
            p = self.callback_priority(task if entity is None else entity)
            held = p if held is None else max(held, p)
        return held

    def _best(self, candidates):
        """The candidate with the highest priority, the earliest seen among equals."""
        best = best_key = None
        for task, entity in candidates:
            seq = self._first_seen.get(task)
            if seq is None:  # e.g. a task from create_task, not yet seen by a wait
                seq = self._first_seen[task] = next(self._seq)
            key = (self.callback_priority(task if entity is None else entity), -seq)
            if best_key is None or key > best_key:
                best, best_key = (task, entity), key
        return best, best_key

    def _outranking_work_ready(self, priority: int) -> bool:
        """Whether an entity without a pending handler and with a priority above ``priority`` is
        ready now: a zero-timeout wait over just those entities (usually few). Subscriptions,
        timers, guard conditions, clients and services are polled; an outranking waitable
        answers True (a full re-poll then decides)."""
        return self._wait_entities(lambda p: p > priority, 0, waitables_answer=True)

    def _wait_held(self, floor: int, timeout_sec) -> None:
        """While callbacks below ``floor`` are held (``awaiting_holds_priority``): wait, at most
        ``timeout_sec`` (None: no limit), for an entity of priority ``floor`` or above to become
        ready or for the executor's wake-up (an awaited request done). Not rclpy's full wait:
        a subscription whose handler is held keeps an rmw event of its own ready, and that wait
        would return at once, again and again. Waitables are not watched here (the next full
        re-poll sees them)."""
        if isinstance(timeout_sec, TimeoutObject):
            timeout_sec = timeout_sec.timeout
        timeout_ns = -1 if timeout_sec is None or timeout_sec < 0 else int(timeout_sec * 1e9)
        accept = lambda p: p >= floor  # noqa: E731
        if timeout_ns != 0 and self._uncollected:
            # work ready now: no sleep, so no waiter threads yet (the guard is left untouched)
            if self._wait_entities(accept, 0):
                return
            self._hand_to_waiters()
        self._wait_entities(accept, timeout_ns, wake_guard=True)

    def _wait_entities(self, accept: Callable[[int], bool], timeout_ns: int, *,
                       waitables_answer: bool = False, wake_guard: bool = False) -> bool:
        """Wait (``timeout_ns``: 0 polls, -1 has no limit) over the entities without a pending
        handler, free to start, whose priority ``accept`` takes, and with ``wake_guard`` the
        executor's own guard condition; True if one of the entities is ready. With
        ``waitables_answer`` an accepted waitable answers True at once."""
        default = self.default_priority

        def wanted(entity) -> bool:
            return accept(getattr(entity, _PRIORITY_ATTR, default))

        if self._scanner is not None:
            return self._scanner.poll(wanted, timeout_ns, waitables_answer=waitables_answer,
                                      wake_guard=wake_guard)
        return rclpy_wait_entities(self, wanted, timeout_ns, waitables_answer=waitables_answer,
                                   wake_guard=wake_guard)

    def _spin_once_stock(self, timeout_sec, condition) -> None:
        # rclpy's SingleThreadedExecutor._spin_once_impl, kept so the switch is exact.
        try:
            handler, _entity, _node = self.wait_for_ready_callbacks(timeout_sec, None, condition)
        except (ShutdownException, TimeoutException, ConditionReachedException):
            return
        if not self._begin_step():
            return
        try:
            handler()
        finally:
            self._end_step()
        if handler.exception() is not None:
            raise handler.exception()
        handler.result()

    def _pending_entries(self) -> "list[tuple[Task, object]]":
        with self._tasks_lock:
            tasks = list(self._tasks)
        return [(t, e) for t, e, _n in tasks if not t.executing() and not t.done()
                and not t.cancelled()]

    def _refresh(self, timeout_sec, condition) -> "list[tuple[Task, object]]":
        """Re-poll readiness; return the runnable (task, entity) candidates. With requests of
        await_result not collected yet, a poll comes first, and only if it finds nothing are
        they handed to waiter threads before the wait that may sleep."""
        if self._uncollected and (timeout_sec is None or timeout_sec != 0):
            found = self._refresh_once(0.0, condition)
            if found:
                return found
        return self._refresh_once(timeout_sec, condition)

    def _refresh_once(self, timeout_sec, condition) -> "list[tuple[Task, object]]":
        self.stats.refreshes += 1
        pending = self._pending_entries()
        # Never block while a handler is already waiting to run (and allowed to): poll instead.
        if self._candidates(pending, self._held_priority(pending)):
            timeout_sec = 0.0
        if isinstance(timeout_sec, TimeoutObject):
            timeout_sec = timeout_sec.timeout
        if timeout_sec is None or timeout_sec != 0:  # it may sleep: someone else must wake it
            self._hand_to_waiters()
        if self._scanner is not None:
            with self._tasks_lock:  # what rclpy's wait also does: forget finished tasks
                self._tasks = [ten for ten in self._tasks
                               if not ten[0].done() and not ten[0].cancelled()]
            if not self._scanner.wait(timeout_sec, condition):
                return []  # shut down
            return self._seen_candidates()
        # rclpy's own wait: a fresh generator each pick (the base class keeps its own in _cb_iter
        # for the stock path). Entities that already have a handler waiting to run: rclpy
        # re-yields a guard condition whose trigger is not yet handled at every sweep; one
        # handler per trigger is enough.
        waiting = {id(e) for t, e in pending if e is not None and not _started(t)}
        gen = self._wait_for_ready_callbacks(timeout_sec, None, condition)
        # a poll with the least timer slack (the generator waits at its first step: wait_on's
        # docstring says why)
        slack = tighten_timer_slack() if timeout_sec == 0 else None
        try:
            for task, entity, _node in gen:
                if task.cancelled():
                    continue
                if (entity is not None and task not in self._first_seen
                        and not _started(task) and id(entity) in waiting):
                    task.cancel()  # a duplicate: closes its coroutine, rclpy drops it
                    continue
                if entity is not None and not _started(task):
                    waiting.add(id(entity))
        except (TimeoutException, ConditionReachedException):
            pass
        except ShutdownException:
            return []
        finally:
            restore_timer_slack(slack)
            gen.close()
            with self._tasks_lock:  # drop the duplicates cancelled above
                self._tasks = [ten for ten in self._tasks if not ten[0].cancelled()]
        return self._seen_candidates()

    def _seen_candidates(self) -> "list[tuple[Task, object]]":
        """After a wait: the candidates, each pending task marked seen (FIFO among equals)."""
        pending = self._pending_entries()
        for task, _entity in pending:
            if task not in self._first_seen:
                self._first_seen[task] = next(self._seq)
        return self._candidates(pending, self._held_priority(pending))

    def collect_later(self, future: "AcceleratorFuture") -> None:
        """Collect ``future`` (from :func:`await_result`) in this executor's thread when it is
        done, or hand it to a waiter thread before sleeping."""
        if len(self._uncollected) >= 64:  # an executor that never sleeps: drop the done ones
            self._uncollected = [f for f in self._uncollected if not f.done()]
        self._uncollected.append(future)

    def _hand_to_waiters(self) -> None:
        """Before a wait that may sleep: a waiter thread for every request not collected yet
        (it wakes the executor when its request is done)."""
        for f in self._uncollected:
            f.ensure_waiter()
        self._uncollected.clear()

    def _runnable(self, task: Task) -> bool:
        """False for a coroutine task suspended on an rclpy Future that is still pending."""
        if not _started(task):
            return True  # not started yet, or a plain function
        coro = task._handler
        awaited = _awaited_future(coro)
        if awaited is None or awaited.done() or awaited.cancelled():
            return True
        if isinstance(awaited, AcceleratorFuture) and awaited.collect_if_done():
            return True
        if awaited not in self._hooked:
            self._hooked.add(awaited)
            awaited.add_done_callback(lambda _f: self.wake())
            if awaited.done():  # completed between the check and the hook
                return True
        return False


def _say(text: str, log: Optional[Callable[[str], None]]) -> None:
    """One line to ``log``, or to stderr when it is None."""
    if log is not None:
        log(text)
    else:
        import sys
        print(text, file=sys.stderr)
