"""Run the C++ response-time analysis on a :class:`~paam.analysis.model.SystemSpec`.

The analysis itself is ``paam._core.rta`` (core/src/analysis/rta.h); this module converts the
description to its structs and its report back to plain Python values.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from paam.analysis.model import InputError, SystemSpec

HANDLING_BOUNDS = ("min", "per-segment", "per-chain")


def _rta():
    # The single place this package touches the native module.
    from paam import _core
    return _core.rta


@dataclass
class SubChainBound:
    executor: str
    callbacks: list[str]
    wcrt: float
    blocking: float
    own_cpu: float
    handling: float
    handling_per_segment: float
    handling_per_chain: float
    interference_executor: float
    interference_cpu: float
    segments: int
    converged: bool


@dataclass
class ChainBound:
    name: str
    priority: int
    period: float
    deadline: float
    best_effort: bool
    wcrt: float            # math.inf when unbounded; a lower bound of the bound if not converged
    schedulable: bool
    converged: bool
    blocking: float
    own_cpu: float
    handling: float        # H*, including delta * epsilon
    interference: float
    communication: float
    subchains: list[SubChainBound] = field(default_factory=list)


@dataclass
class Analysis:
    chains: list[ChainBound]
    schedulable: bool

    def chain(self, name: str) -> ChainBound:
        for c in self.chains:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready: infinite times become ``None``."""
        def clean(value: Any) -> Any:
            if isinstance(value, float) and not math.isfinite(value):
                return None
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, list):
                return [clean(v) for v in value]
            return value
        return {"chains": [clean(asdict(c)) for c in self.chains],
                "schedulable": self.schedulable}


def to_core(spec: SystemSpec):
    """The ``paam._core.rta.System`` of a description (units, not types, on every segment)."""
    rta = _rta()
    system = rta.System()
    acc_index = {name: i for i, name in enumerate(spec.accelerators)}
    ex_index = {name: i for i, name in enumerate(spec.executors)}
    accelerators = []
    for a in spec.accelerators.values():
        x = rta.Accelerator()
        x.name, x.buckets, x.overhead, x.preemption = a.name, a.buckets, a.overhead, a.kappa()
        accelerators.append(x)
    executors = []
    for e in spec.executors.values():
        x = rta.Executor()
        x.name, x.cpu, x.priority = e.name, e.cpu, e.priority
        x.wait = rta.Wait.SUSPEND if e.wait == "suspend" else rta.Wait.SPIN  # hybrid: spin
        executors.append(x)
    chains = []
    for ch in spec.chains:
        c = rta.Chain()
        c.name, c.priority, c.period = ch.name, ch.priority, ch.period
        c.deadline = ch.deadline or 0.0
        c.best_effort = ch.best_effort
        callbacks = []
        for cb in ch.callbacks:
            if cb.executor not in ex_index:
                raise InputError(f"chain '{ch.name}', callback '{cb.name}': field 'executor': "
                                 f"unknown executor {cb.executor!r}")
            x = rta.Callback()
            x.name, x.executor, x.wcet = cb.name, ex_index[cb.executor], cb.wcet
            segments = []
            for s in cb.segments:
                if s.accelerator not in acc_index:
                    raise InputError(f"chain '{ch.name}', callback '{cb.name}': field "
                                     f"'accelerator': '{s.accelerator}' is not a unit")
                y = rta.Segment()
                y.accelerator, y.wcet = acc_index[s.accelerator], s.wcet
                segments.append(y)
            x.segments = segments
            callbacks.append(x)
        c.callbacks = callbacks
        chains.append(c)
    system.accelerators = accelerators
    system.executors = executors
    system.chains = chains
    system.comm_cost = spec.comm_cost
    return system


def _buckets(spec: SystemSpec):
    """The core's rule-R2 bucket of every chain on every accelerator (-1: the chain does not
    use it), indexed [accelerator][chain] in the spec's order."""
    try:
        return _rta().assign_buckets(to_core(spec))
    except ValueError as exc:
        raise InputError(str(exc)) from exc


def bucket_demand(spec: SystemSpec) -> dict[str, list[float]]:
    """Per accelerator, the declared demand of each bucket: the sum of segment WCET / period
    over the chains the server puts in it (rule R2, the core's ``assign_buckets``), as a
    fraction of the unit. Best-effort chains count too: they occupy the unit all the same."""
    buckets = _buckets(spec)
    out: dict[str, list[float]] = {}
    for a_index, acc in enumerate(spec.accelerators.values()):
        demand = [0.0] * acc.buckets
        for c_index, ch in enumerate(spec.chains):
            b = buckets[a_index][c_index]
            if b >= 0:
                demand[b] += sum(s.wcet for cb in ch.callbacks for s in cb.segments
                                 if s.accelerator == acc.name) / ch.period
        out[acc.name] = demand
    return out


def best_effort_buckets(spec: SystemSpec) -> dict[str, int]:
    """Per accelerator, how many of its lowest buckets hold only best-effort chains (or no
    chain): the buckets that paamd's CPU backend can keep off SCHED_FIFO (``paamd
    --fair-buckets``) without touching any analysed chain, so that best-effort load cannot use
    up the kernel's real-time budget on the device core."""
    buckets = _buckets(spec)
    out: dict[str, int] = {}
    for a_index, acc in enumerate(spec.accelerators.values()):
        critical = {buckets[a_index][c] for c, ch in enumerate(spec.chains)
                    if not ch.best_effort and buckets[a_index][c] >= 0}
        lowest_critical = max(critical, default=-1)
        out[acc.name] = acc.buckets - 1 - lowest_critical
    return out


def analyze(spec: SystemSpec, *, handling: str = "min", blocking: str = "cpu",
            stop_at_deadline: bool = True) -> Analysis:
    """Bounds of every chain of ``spec``.

    :param handling: ``"min"`` (the PAAM analysis), ``"per-segment"`` (Lemma 2 only) or
        ``"per-chain"`` (Lemma 3 only).
    :param blocking: what a lower-priority chain's callback on the same executor blocks with:
        ``"cpu"``, its CPU WCET (the paper's Lemma 4), or ``"callback"``, its CPU WCET plus
        its accelerator segments' handling time (safe when such a callback uses an
        accelerator; docs/analysis.md).
    :param stop_at_deadline: stop each iteration as soon as it passes the deadline (the
        analysis as specified); ``False`` iterates on, so a missing chain shows its real bound.
    :raises InputError: the description is malformed.
    """
    rta = _rta()
    options = rta.Options()
    options.handling = {"min": rta.HandlingBound.MIN,
                        "per-segment": rta.HandlingBound.PER_SEGMENT,
                        "per-chain": rta.HandlingBound.PER_CHAIN}[handling]
    if blocking not in ("cpu", "callback"):
        raise InputError(f"blocking {blocking!r}: expected 'cpu' or 'callback'")
    options.blocking = {"cpu": rta.Blocking.CPU, "callback": rta.Blocking.CALLBACK}[blocking]
    options.stop_at_deadline = stop_at_deadline
    try:
        report = rta.analyze(to_core(spec), options)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    executor_names = list(spec.executors)
    chains = []
    for ch, r in zip(spec.chains, report.chains):
        subs = [SubChainBound(
            executor=executor_names[s.executor],
            callbacks=[cb.name for cb in ch.callbacks[s.first_callback:s.last_callback + 1]],
            wcrt=s.wcrt, blocking=s.blocking, own_cpu=s.own_cpu, handling=s.handling,
            handling_per_segment=s.handling_per_segment,
            handling_per_chain=s.handling_per_chain,
            interference_executor=s.interference_executor,
            interference_cpu=s.interference_cpu, segments=s.segments,
            converged=s.converged) for s in r.subchains]
        chains.append(ChainBound(
            name=r.name, priority=ch.priority, period=ch.period, deadline=r.deadline,
            best_effort=r.best_effort, wcrt=r.wcrt, schedulable=r.schedulable,
            converged=r.converged, blocking=r.blocking, own_cpu=r.own_cpu,
            handling=r.handling, interference=r.interference,
            communication=r.communication, subchains=subs))
    return Analysis(chains=chains, schedulable=report.schedulable)
