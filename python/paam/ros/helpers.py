"""Chains declared once, and paam clients used from rclpy callbacks.

A :class:`Chain` holds what PAAM's analysis and PiCAS need to know about one processing chain —
priority, period, deadline, the executor it runs on, and its callbacks in order with their CPU
WCET, accelerator segments and kernels. From that one declaration come:

* the executor's callback priorities (:meth:`PicasExecutor.add_chain`, PiCAS Algorithm 1),
* the executor's real-time settings (:meth:`Chain.configure_executor`),
* each callback's paam registration with the chain's priority and its timing model
  (:meth:`Chain.client`, :meth:`Chain.remote_client`),
* the chain in PAAM's analysis format (:meth:`Chain.analysis_chain`, :func:`analysis_system`:
  what ``paam analyze`` reads),

so they cannot disagree.

Best-effort chains (``best_effort=True``, the analysis format's ``best_effort: true``) have no
deadline to meet. Everywhere they go:

* registration: the timing model carries ``best_effort`` — paamd's admission test then accounts
  for the chain's interference on the critical chains but never refuses it for its own deadline
  (a registration without any timing model would hide that interference from the test);
* executor priorities: :func:`picas_callback_priorities` ranks every callback of a best-effort
  chain below every callback of a critical chain, whatever the chain priorities;
* analysis: the chain is written with ``best_effort: true`` (its bound is reported, its
  schedulability is not required).

The chain priority itself is not changed: paamd maps it onto its accelerator buckets, and the
analysis uses it, so give best-effort chains the lowest chain priorities of the system (as the
analysis format's examples do) for the accelerator to rank them below the critical chains too.

Using a client inside a callback (the PAAM paper's Fig. 6):

* synchronous: ``out = client.request(...)`` — the executor thread waits (spin or suspend, the
  chain's ``executor_wait``); the analysis models exactly this (callbacks are non-preemptive);
* asynchronous: ``fut = client.submit(...)``, CPU work that does not need the result, then
  ``out = fut.result()`` in the same callback — also modelled (the accelerator segment overlaps
  the CPU work);
* :func:`paam.ros.await_result` (in :mod:`paam.ros.executor`) lets an ``async def`` callback
  ``await`` a paam future so the executor runs other callbacks meanwhile. The analysis treats a
  callback as one non-preemptive job: with :class:`PicasExecutor`'s ``awaiting_holds_priority``
  no lower-priority callback starts during the wait, so its one blocking callback of a less
  critical chain still holds, but the interleaving itself is not modelled; keep such chains
  outside admission control unless their bound has been checked by measurement.

Nothing here imports rclpy at import time.
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["CallbackSpec", "Chain", "picas_callback_priorities", "analysis_system"]

_WAIT_MODES = ("spin", "suspend", "hybrid")


@dataclasses.dataclass(frozen=True)
class CallbackSpec:
    """One callback of a chain.

    :param name: unique within the chain.
    :param cpu_wcet_ms: WCET of all its CPU segments together (ms).
    :param segments_ms: WCET of each accelerator segment, in order (ms).
    :param kernels: kernels its paam client registers: names, or name → (max_in, max_out) bytes.
    """

    name: str
    cpu_wcet_ms: float = 0.0
    segments_ms: tuple[float, ...] = ()
    kernels: Any = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "segments_ms", tuple(float(s) for s in self.segments_ms))
        if self.cpu_wcet_ms < 0 or any(s < 0 for s in self.segments_ms):
            raise ValueError(f"callback {self.name!r}: negative WCET")


class Chain:
    """A processing chain, declared once (see the module docstring).

    :param name: unique among the chains of a system.
    :param priority: chain priority; larger is more critical.
    :param period_ms: activation period (ms).
    :param deadline_ms: constrained deadline (ms); defaults to the period.
    :param callbacks: :class:`CallbackSpec` (or dicts with its fields), in chain order.
    :param executor: name of the executor the chain runs on.
    :param executor_cpu: CPU that executor is pinned to (-1: not pinned).
    :param executor_priority: SCHED_FIFO priority of that executor (0: none).
    :param executor_wait: how its callbacks wait for the accelerator: spin | suspend | hybrid.
    :param best_effort: no deadline to meet (see the module docstring): registered as
        best-effort, below every critical chain in the executor, ``best_effort: true`` in the
        analysis.
    """

    def __init__(self, name: str, *, priority: int, period_ms: float,
                 callbacks: Sequence[CallbackSpec | Mapping[str, Any]],
                 deadline_ms: float | None = None, executor: str = "executor",
                 executor_cpu: int = -1, executor_priority: int = 0,
                 executor_wait: str = "suspend", best_effort: bool = False) -> None:
        if executor_wait not in _WAIT_MODES:
            raise ValueError(f"executor_wait must be one of {_WAIT_MODES}, not {executor_wait!r}")
        if period_ms <= 0:
            raise ValueError("period_ms must be positive")
        self.name = name
        self.priority = int(priority)
        self.period_ms = float(period_ms)
        self.deadline_ms = float(deadline_ms if deadline_ms is not None else period_ms)
        if self.deadline_ms > self.period_ms:
            raise ValueError("deadline_ms must not exceed period_ms (constrained deadlines)")
        self.executor = executor
        self.executor_cpu = int(executor_cpu)
        self.executor_priority = int(executor_priority)
        self.executor_wait = executor_wait
        if not isinstance(best_effort, bool):
            raise ValueError(f"best_effort must be True or False, not {best_effort!r}")
        self.best_effort = best_effort
        self.callbacks: tuple[CallbackSpec, ...] = tuple(
            c if isinstance(c, CallbackSpec) else CallbackSpec(**dict(c)) for c in callbacks)
        if not self.callbacks:
            raise ValueError(f"chain {name!r} has no callbacks")
        names = [c.name for c in self.callbacks]
        if len(set(names)) != len(names):
            raise ValueError(f"chain {name!r}: duplicate callback names {names}")
        self._entities: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        be = ", best_effort=True" if self.best_effort else ""
        return (f"Chain({self.name!r}, priority={self.priority}, period_ms={self.period_ms}{be}, "
                f"callbacks={list(self.callback_names)})")

    @property
    def callback_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.callbacks)

    def callback(self, name: str) -> CallbackSpec:
        for c in self.callbacks:
            if c.name == name:
                return c
        raise KeyError(f"chain {self.name!r} has no callback {name!r}; "
                       f"it has {list(self.callback_names)}")

    def index(self, name: str) -> int:
        """0-based position of callback ``name`` in the chain."""
        return self.callback_names.index(self.callback(name).name)

    # -- executor side -------------------------------------------------------------------------

    def bind(self, name: str, entity: Any) -> Any:
        """Record that rclpy ``entity`` (timer, subscription, ...) runs callback ``name``."""
        self.callback(name)
        with self._lock:
            self._entities[name] = entity
        return entity

    def bound_entities(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._entities)

    def configure_executor(self, executor) -> dict[str, int]:
        """Give ``executor`` (a PicasExecutor) this chain's callback priorities and RT settings.

        An executor all of whose chains are best-effort is marked best-effort (SCHED_IDLE where
        SCHED_FIFO is denied: :mod:`paam.ros.rt`)."""
        prio = self.executor_priority if self.executor_priority > 0 else None
        cpu = self.executor_cpu if self.executor_cpu >= 0 else None
        table = executor.add_chain(self)
        executor.set_executor_priority_cpu(
            prio, cpu, best_effort=all(c.best_effort for c in executor.chains))
        return table

    # -- server side ---------------------------------------------------------------------------

    def timing_model(self, name: str):
        """The ``paam.TimingModel`` of callback ``name``, as the server's admission test sees it."""
        import paam
        cb = self.callback(name)
        return paam.TimingModel(
            chain=self.name, callback_index=self.index(name),
            chain_length=len(self.callbacks), period_ms=self.period_ms,
            deadline_ms=self.deadline_ms, cpu_wcet_ms=cb.cpu_wcet_ms,
            segments_ms=list(cb.segments_ms), executor=self.executor,
            executor_cpu=self.executor_cpu, executor_priority=self.executor_priority,
            executor_wait=self.executor_wait, best_effort=self.best_effort)

    # -- analysis ------------------------------------------------------------------------------

    def analysis_chain(self, accelerator: str = "accelerator"):
        """This chain as ``paam.analysis.model.Chain`` (segments on ``accelerator``)."""
        from paam.analysis import model
        return model.Chain(
            name=self.name, priority=self.priority, period=self.period_ms,
            deadline=self.deadline_ms, best_effort=self.best_effort,
            callbacks=[model.Callback(
                name=cb.name, executor=self.executor, wcet=cb.cpu_wcet_ms,
                segments=[model.Segment(accelerator=accelerator, wcet=s) for s in cb.segments_ms])
                for cb in self.callbacks])

    def client_kwargs(self, name: str, *, timing: bool = True) -> dict[str, Any]:
        """Keyword arguments of ``paam.Client`` for callback ``name``."""
        cb = self.callback(name)
        kernels = dict(cb.kernels) if isinstance(cb.kernels, Mapping) else list(cb.kernels)
        kw: dict[str, Any] = {"priority": self.priority, "kernels": kernels,
                              "wait": self.executor_wait}
        if timing:
            kw["timing"] = self.timing_model(name)
        return kw

    def client(self, name: str, *, timing: bool = True, **overrides):
        """A local ``paam.Client`` registered for callback ``name`` with the chain's priority.

        ``overrides`` go to ``paam.Client`` (for example ``socket=``).
        """
        import paam
        kw = self.client_kwargs(name, timing=timing)
        kw.update(overrides)
        return paam.Client(**kw)

    def remote_client(self, name: str, *, timing: bool = True, **overrides):
        """A :class:`paam.ros.RemoteClient` for callback ``name`` (through a bridge)."""
        from paam.ros.remote import RemoteClient
        kw = self.client_kwargs(name, timing=timing)
        kw.update(overrides)
        return RemoteClient(**kw)


def picas_callback_priorities(chains: Iterable[Chain]) -> dict[tuple[str, str], int]:
    """PiCAS Algorithm 1: callback priorities for ``chains`` sharing one executor.

    Chains sorted by ascending chain priority, best-effort chains before (below) every critical
    chain; walking them in that order, their callbacks get 1, 2, 3, ... in chain order. So every
    callback of a more critical chain outranks every callback of a less critical one, every
    critical callback outranks every best-effort one, and within a chain a later stage outranks
    an earlier one (it finishes work already in flight). Returns (chain name, callback name) →
    priority.
    """
    ordered = sorted(chains, key=lambda c: (not getattr(c, "best_effort", False), c.priority))
    seen = set()
    for c in ordered:
        if c.priority in seen:
            raise ValueError(f"chain priorities must be unique; {c.priority} is used twice")
        seen.add(c.priority)
    out: dict[tuple[str, str], int] = {}
    p = 1
    for c in ordered:
        for cb in c.callbacks:
            out[(c.name, cb.name)] = p
            p += 1
    return out


def analysis_system(chains: Iterable[Chain], *, accelerator: str = "accelerator",
                    buckets: int = 1, overhead_ms: float = 0.0, preemption_ms: float = 0.0,
                    comm_cost_ms: float = 0.0):
    """The ``paam.analysis.model.SystemSpec`` of ``chains`` on one accelerator: what
    ``paam analyze`` reads (``paam.analysis.model.dump_yaml`` writes it as YAML).

    Executors come from the chains' ``executor``, ``executor_cpu``, ``executor_priority`` and
    ``executor_wait``; chains naming one executor must agree on them, and each must be pinned
    (the analysis is per CPU). Callback priorities are PiCAS's (:func:`picas_callback_priorities`
    per executor).
    """
    from paam.analysis import model
    chains = list(chains)
    executors: dict[str, "model.Executor"] = {}
    for c in chains:
        ex = model.Executor(name=c.executor, cpu=c.executor_cpu, priority=c.executor_priority,
                            wait=c.executor_wait)
        if ex.cpu < 0:
            raise ValueError(f"chain {c.name!r}: executor {c.executor!r} is not pinned "
                             "(executor_cpu); the analysis needs its CPU")
        seen = executors.setdefault(ex.name, ex)
        if seen != ex:
            raise ValueError(f"chain {c.name!r}: executor {c.executor!r} has cpu/priority/wait "
                             f"{(ex.cpu, ex.priority, ex.wait)}, another chain gives "
                             f"{(seen.cpu, seen.priority, seen.wait)}")
    tables = {name: picas_callback_priorities([c for c in chains if c.executor == name])
              for name in executors}
    out = []
    for c in chains:
        ac = c.analysis_chain(accelerator)
        for cb in ac.callbacks:
            cb.priority = tables[c.executor][(c.name, cb.name)]
        out.append(ac)
    return model.SystemSpec(
        accelerators={accelerator: model.Accelerator(name=accelerator, buckets=int(buckets),
                                                     overhead=float(overhead_ms),
                                                     preemption=float(preemption_ms))},
        executors=executors, chains=out, comm_cost=float(comm_cost_ms))
