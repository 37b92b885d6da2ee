"""The PicasExecutor's wait for ready callbacks: rclpy's wait, without rebuilding it each time.

rclpy's ``Executor._wait_for_ready_callbacks`` redoes all of its bookkeeping in Python at every
wait: it walks every entity of every node through generator properties, asks every entity's
callback group whether it may run (for a mutually exclusive group a lock, a weak reference and a
set lookup per entity), enters every handle through an ``ExitStack``, builds a new wait set, and
after the wait scans the waitable list once per waitable. The PicasExecutor waits before every
pick, so on case study 2's hot path that was the larger part of the executor's own time.

:class:`ReadinessScanner` keeps what does not change between waits: the executor's nodes and
their entity lists (looked at again only after the executor was woken, which rclpy does whenever
a node creates or destroys an entity, and rebuilt when a node was added or removed or one of its
lists differs from the copy kept), the entities flattened with their handles' addresses, and one
rcl wait set sized for all of them (cleared and refilled at each wait). At each
wait it still leaves out entities with a handler pending or a busy callback group, enters the
handle of every entity it waits on (so none is destroyed during the wait), and re-triggers guard
conditions triggered but not yet handled, as rclpy does. Ready entities get their handlers from
rclpy's own ``Executor._make_handler`` and ``_take_*``, so what a callback sees is rclpy's.

rclpy internals used (stable across Jazzy, rclpy 7.1): a node's entity lists
(``Node._subscriptions`` etc. and ``Node._Node__waitables``; copies of what the public iterators
yield if they are missing), the executor's ``_make_handler``, ``_take_*``, ``_guard``,
``_sigint_gc``, ``_is_shutdown`` and ``_context``, and the entities' ``_executor_event`` /
``_executor_triggered`` flags.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.exceptions import InvalidHandle
from rclpy.executors import ExternalShutdownException
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

from paam.ros.rt import restore_timer_slack, tighten_timer_slack

__all__ = ["ReadinessScanner"]

_KINDS = ("timers", "subscriptions", "guards", "clients", "services", "waitables")
_UNKNOWN = object()  # a callback group not looked at yet in this wait


def wait_on(ws, timeout_ns: int) -> None:
    """``ws.wait(timeout_ns)`` (releases the GIL while blocked); a poll (``timeout_ns`` 0) runs
    with the least timer slack. On rmw_fastrtps a zero-timeout wait is a futex wait until "now",
    which the kernel lets end up to the thread's timer slack late: 50 µs by default, unless
    :func:`paam.ros.rt.apply_rt` already took it away (:func:`~paam.ros.rt.tighten_timer_slack`)."""
    if timeout_ns != 0:
        ws.wait(timeout_ns)
        return
    previous = tighten_timer_slack()
    try:
        ws.wait(0)
    finally:
        restore_timer_slack(previous)


def _entity_lists(node) -> tuple:
    """The node's own entity lists, in ``_KINDS`` order (copies where rclpy hides them)."""
    try:
        return (node._timers, node._subscriptions, node._guards, node._clients, node._services,
                node._Node__waitables)
    except AttributeError:
        return tuple(list(getattr(node, kind)) for kind in _KINDS)


class _Snapshot:
    """The executor's nodes and copies of their entity lists, with a wait set that fits them, and
    the entities flattened in the order rclpy makes handlers (node by node: timers,
    subscriptions, guard conditions, clients, services), each with its handle and the handle's
    address (what the wait reports ready), so a wait walks one list."""

    __slots__ = ("nodes", "lists", "wait_set", "entries", "waitables")

    def __init__(self, nodes: list, context) -> None:
        self.nodes = nodes
        self.lists = [tuple(list(lst) for lst in _entity_lists(n)) for n in nodes]
        count = [0, 2, 0, 0, 0, 0]  # subscriptions, guards (+ the executor's two), timers, ...
        # (entity, handle, address, kind: the index in _KINDS, node)
        self.entries: list = []
        self.waitables: list = []  # (waitable, node)
        for node, (timers, subs, guards, clients, services, waitables) in zip(nodes,
                                                                              self.lists):
            count[0] += len(subs)
            count[1] += len(guards)
            count[2] += len(timers)
            count[3] += len(clients)
            count[4] += len(services)
            for kind, group in enumerate((timers, subs, guards, clients, services)):
                for e in group:
                    handle = e.handle
                    try:
                        with handle:
                            address = handle.pointer
                    except InvalidHandle:
                        continue  # destroyed: never ready again
                    self.entries.append((e, handle, address, kind, node))
            for w in waitables:
                self.waitables.append((w, node))
                n = w.get_num_entities()
                count[0] += n.num_subscriptions
                count[1] += n.num_guard_conditions
                count[2] += n.num_timers
                count[3] += n.num_clients
                count[4] += n.num_services
                count[5] += n.num_events
        with context.handle:
            self.wait_set = _rclpy.WaitSet(*count, context.handle)

    def current(self, nodes: list) -> bool:
        """Whether this snapshot still holds ``nodes`` and each node's entities."""
        if nodes != self.nodes:
            return False
        for node, kept in zip(nodes, self.lists):
            if any(now != old for now, old in zip(_entity_lists(node), kept)):
                return False
        return True


_TIMER, _SUBSCRIPTION, _GUARD, _CLIENT, _SERVICE = range(5)
_READY_KIND = ("timer", "subscription", "guard_condition", "client", "service")


class _Selection:
    """The entities of one wait: those free to start (no handler pending, callback group free)
    and kept by the caller's filter, their handles entered until :meth:`release`."""

    __slots__ = ("entries", "waitables", "kinds", "entered")

    def __init__(self, snap: _Snapshot, keep: Optional[Callable[[object], bool]]) -> None:
        self.entered: list = []
        self.entries: list = []  # the snapshot's entries selected, in its order
        self.kinds = [False] * 5  # which kinds were selected
        free: dict = {}  # callback group -> may start (None: ask the group per entity)
        entered, entries, kinds = self.entered, self.entries, self.kinds
        for rec in snap.entries:
            e = rec[0]
            if e._executor_event or (keep is not None and not keep(e)):
                continue
            group = e.callback_group
            ok = free.get(group, _UNKNOWN)
            if ok is _UNKNOWN:
                cls = type(group)
                if cls is MutuallyExclusiveCallbackGroup:
                    ok = group._active_entity is None
                elif cls is ReentrantCallbackGroup:
                    ok = True
                else:
                    ok = None
                free[group] = ok
            if not (group.can_execute(e) if ok is None else ok):
                continue
            handle = rec[1]
            try:
                handle.__enter__()
            except InvalidHandle:
                continue
            entered.append(handle)
            entries.append(rec)
            kinds[rec[3]] = True
        self.waitables = []  # (waitable, node)
        for w, node in snap.waitables:
            if w._executor_event or (keep is not None and not keep(w)):
                continue
            group = w.callback_group
            if group.can_execute(w) and self.enter(w):
                self.waitables.append((w, node))

    def enter(self, handle) -> bool:
        try:
            handle.__enter__()
        except InvalidHandle:
            return False
        self.entered.append(handle)
        return True

    def guards(self) -> list:
        """The selected guard conditions."""
        return [rec[0] for rec in self.entries if rec[3] == _GUARD]

    def fill(self, ws, own: list) -> None:
        """Clear ``ws`` and add the selected entities and the guard conditions ``own``."""
        ws.clear_entities()
        add = (ws.add_timer, ws.add_subscription, ws.add_guard_condition, ws.add_client,
               ws.add_service)
        for rec in self.entries:
            add[rec[3]](rec[1])
        for g in own:
            ws.add_guard_condition(g.handle)
        for w, _node in self.waitables:
            w.add_to_wait_set(ws)

    def ready(self, ws, own: list = ()) -> list:
        """After ``ws.wait``: mark the selected guard conditions (and ``own``) that the wait
        found triggered, as rclpy does (the wait consumed their triggers), and return the
        selected entries that are ready, in the snapshot's order."""
        kinds = self.kinds
        sets = [set(ws.get_ready_entities(_READY_KIND[k])) if kinds[k] else () for k in range(5)]
        if own:
            triggered = sets[_GUARD] if kinds[_GUARD] else set(
                ws.get_ready_entities("guard_condition"))
            for g in own:
                if g.handle.pointer in triggered:
                    g._executor_triggered = True
        out = []
        for rec in self.entries:
            if rec[2] in sets[rec[3]]:
                kind = rec[3]
                if kind == _GUARD:
                    rec[0]._executor_triggered = True
                elif kind == _TIMER and not rec[1].is_timer_ready():
                    continue  # (rclpy's check: a cancelled timer can be reported ready)
                out.append(rec)
            elif rec[3] == _GUARD and rec[0]._executor_triggered:
                out.append(rec)  # triggered before, its handler not made yet
        return out

    def release(self) -> None:
        for handle in reversed(self.entered):
            try:
                handle.__exit__(None, None, None)
            except InvalidHandle:
                pass
        self.entered.clear()


class ReadinessScanner:
    """Waits for work on an executor's nodes and makes rclpy handler tasks for what is ready.

    Thread safety: from the executor's spinning thread only (one call at a time).
    """

    def __init__(self, executor) -> None:
        self._ex = executor
        self._snap: Optional[_Snapshot] = None

    def wait(self, timeout_sec: Optional[float], condition: Callable[[], bool]) -> bool:
        """Wait at most ``timeout_sec`` (``None`` or negative: no limit; 0: poll once) until an
        entity is ready, make a handler task for each ready one (appended to the executor's
        ``_tasks``, as rclpy's wait does), and return True; return True at once when
        ``condition()`` holds, False when the executor is shut down. A wake-up without work
        (the executor's guard condition) waits again for the time left."""
        ex = self._ex
        if timeout_sec is None or timeout_sec < 0:
            deadline = None
            timeout_ns = -1
        else:
            timeout_ns = int(timeout_sec * 1e9)
            deadline = time.monotonic_ns() + timeout_ns
        while True:
            if ex._is_shutdown:
                return False
            if condition():
                return True
            if self._wait_once(timeout_ns):
                return True
            if ex._is_shutdown:
                return False
            if deadline is not None:
                timeout_ns = deadline - time.monotonic_ns()
                if timeout_ns <= 0:
                    return True

    def poll(self, keep: Callable[[object], bool], timeout_ns: int, *,
             waitables_answer: bool = False, wake_guard: bool = False) -> bool:
        """Wait (``timeout_ns``: 0 polls, -1 has no limit) over the entities free to start that
        ``keep`` keeps, and with ``wake_guard`` the executor's own guard condition; True if one
        of the entities is ready. No handler is made. Waitables are not waited on: with
        ``waitables_answer`` a kept one answers True at once, else the next :meth:`wait` sees
        them."""
        ex = self._ex
        snap = self._snapshot()
        sel = _Selection(snap, keep)
        try:
            if sel.waitables:
                if waitables_answer:
                    return True
                sel.waitables = []  # not watched here: the next wait() sees them
            if not (sel.entries or wake_guard):
                return False
            own = []
            if wake_guard:
                if not sel.enter(ex._guard.handle):
                    return False  # shut down
                own.append(ex._guard)
            if not sel.enter(ex._context.handle):
                return False
            ws = snap.wait_set
            sel.fill(ws, own)
            wait_on(ws, timeout_ns)
            return bool(sel.ready(ws))
        finally:
            sel.release()

    def close(self) -> None:
        """Let go of the nodes, entities and wait set kept (the executor is shut down); a wait
        in progress keeps its own until it returns."""
        self._snap = None

    def _snapshot(self) -> _Snapshot:
        """The snapshot, checked against the nodes only after the executor was woken: rclpy
        wakes a node's executor (``Executor.wake``) whenever it creates or destroys one of
        the node's entities, and the PicasExecutor notes that in ``_entities_changed``.
        Other executors get the check at every wait."""
        ex = self._ex
        snap = self._snap
        changed = getattr(ex, "_entities_changed", None)
        if snap is not None and changed is False:
            return snap
        if changed:
            ex._entities_changed = False  # (cleared before the lists are read)
        nodes = ex.get_nodes()
        if snap is None or not snap.current(nodes):
            snap = self._snap = _Snapshot(nodes, ex._context)
        return snap

    def _wait_once(self, timeout_ns: int) -> bool:
        """One wait; True if it made a handler."""
        ex = self._ex
        snap = self._snapshot()
        sel = _Selection(snap, None)
        try:
            for g in sel.guards():
                if g._executor_triggered:  # triggered, not handled yet: wake at once
                    g.trigger()
            own = [g for g in (ex._guard, ex._sigint_gc) if g is not None and sel.enter(g.handle)]
            if not sel.enter(ex._context.handle):
                return False
            ws = snap.wait_set
            sel.fill(ws, own)
            wait_on(ws, timeout_ns)
            if ex._is_shutdown:
                return False
            if not ex._context.ok():
                raise ExternalShutdownException()
            ready = sel.ready(ws, own)
            made = False
            for w, node in sel.waitables:  # rclpy's order: waitables, then node by node
                if w.is_ready(ws):
                    ex._make_handler(w, node, ex._take_waitable)
                    made = True
            takes = (ex._take_timer, ex._take_subscription, ex._take_guard_condition,
                     ex._take_client, ex._take_service)
            for e, _handle, _address, kind, node in ready:
                ex._make_handler(e, node, takes[kind])
                made = True
            return made
        finally:
            sel.release()
