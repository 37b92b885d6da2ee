"""What case study 1 computes from its runs: the analysis inputs a PAAM run measured (epsilon,
the rclpy cost), the bound fed with them, each chain's latency per method, PAAM's request
stages, and the host's steal and Python's collector against the critical chain's instances."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from paam.analysis.bounds import bucket_demand
from paam.analysis.model import SystemSpec
from paam_experiments.case_study1.config import Config
from paam_experiments.case_study1.executor import STAGES
from paam_experiments.case_study1.runner import MethodRun, Placement, Runs
from paam_experiments.case_study1.system import analysed_bounds, critical_chain
from paam_experiments.common.collector import gc_instances, gc_summary
from paam_experiments.common.host import host_summary, split_by_steal, steal_around
from paam_experiments.common.methods import default_kappa
from paam_experiments.common.stats import summarize


def num(x: float | None) -> float | None:
    """``x`` as a float, None where it is None or not finite (an unbounded chain)."""
    return None if x is None or not math.isfinite(x) else float(x)


@dataclasses.dataclass
class Costs:
    """What a PAAM run measured of the analysis' inputs, from ``chain`` (the critical one):
    epsilon (ms, the largest server overhead of one of its ``requests``), and the rclpy/Python
    cost per callback that the declared WCETs leave out (``delta_ms``: the largest callback CPU
    time beyond its burn, ``body_ms``, plus the largest time per callback the chain spent
    outside its callbacks, ``executor_ms``)."""

    chain: str | None
    epsilon_ms: float | None
    body_ms: float
    executor_ms: float
    delta_ms: float
    requests: int


def measured_costs(run: MethodRun, spec: SystemSpec) -> Costs:
    """The analysis' inputs a PAAM run measured, from the most critical chain, whose requests
    nothing outranks in the server or on the device and whose executor nothing else delays.
    Epsilon is the sum of the stages outside the queue and the device (submitted -> dequeued,
    picked -> device start, device end -> completed -> client woken); the launch stage also
    holds the device-side wait for lower buckets' blocks, which the analysis charges to kappa:
    counting it here is on the safe side. A less critical chain's stages also hold
    interference the analysis bounds by itself (a higher bucket's kernels occupying the device,
    a higher executor holding the CPU while the client should wake)."""
    top = critical_chain(spec)
    st = run.stages_us
    mine = np.asarray([top is not None and c == top.name for c in run.stage_chain], bool)
    eps = float(st[mine].sum(axis=1).max()) / 1e3 if mine.any() else None
    excess = run.body_excess_ms
    body = max(0.0, max(excess)) if excess else 0.0
    gap = run.gap_ms.get(top.name) if top is not None else None
    executor = max(0.0, float(gap.max()) / len(top.callbacks)) if gap is not None and gap.size \
        else 0.0
    return Costs(chain=top.name if top else None, epsilon_ms=eps, body_ms=body,
                 executor_ms=executor, delta_ms=body + executor, requests=int(mine.sum()))


@dataclasses.dataclass
class Bound:
    """The analysis bound of every chain (``plain``: the paper's WCETs; ``with_ros``: each
    callback's WCET raised by the measured rclpy cost ``delta_ms``), the epsilon and kappa it
    was fed and where they came from, and the system it analysed."""

    epsilon_ms: float
    epsilon_from: str
    kappa_ms: float
    delta_ms: float
    measured_in: str
    costs: Costs | None
    costs_in_run: Costs | None
    plain: dict[str, float]
    with_ros: dict[str, float]
    system: SystemSpec


def compute_bound(config: Config, spec: SystemSpec, runs: Runs) -> Bound:
    """The bound with epsilon and the rclpy cost measured under load in the calibration run
    (not in the run the bound is compared with; the measured run itself where there is none),
    or as ``--overhead-ms`` gives, or on the idle server, or as the system file says; kappa
    as ``--preemption-ms`` gives, else the backend's default."""
    kappa = (config.preemption_ms if config.preemption_ms is not None
             else default_kappa(config.backend))
    calib, paam = runs.calibration_run, runs.results.get("PAAM")
    source = calib if calib is not None else paam
    measured_in = "the calibration run" if calib is not None else "the measured run itself"
    costs = measured_costs(source, spec) if source is not None else None
    costs_in_run = measured_costs(paam, spec) if paam is not None else None
    if config.overhead_ms is not None:
        eps, eps_from = config.overhead_ms, "--overhead-ms"
    elif costs is not None and costs.epsilon_ms is not None:
        eps = costs.epsilon_ms
        eps_from = f"max server overhead of a {costs.chain} request in {measured_in}"
    elif runs.idle_overhead_us:
        eps, eps_from = runs.idle_overhead_us["max"] / 1e3, "max on the idle server"
    else:
        eps, eps_from = next(iter(spec.accelerators.values())).overhead, "the system file"
    delta = costs.delta_ms if costs else 0.0
    plain, system = analysed_bounds(spec, eps, kappa)
    with_ros, _ = analysed_bounds(spec, eps, kappa, delta)
    return Bound(epsilon_ms=eps, epsilon_from=eps_from, kappa_ms=kappa, delta_ms=delta,
                 measured_in=measured_in, costs=costs, costs_in_run=costs_in_run, plain=plain,
                 with_ros=with_ros, system=system)


def latency_by_steal(run: MethodRun, chain: str, bound: float | None) -> dict:
    """A chain's instances in a run apart for where the host left the CPUs alone and the others
    (:func:`paam_experiments.common.host.split_by_steal` of the steal around each), and how many
    of those above ``bound`` fell in each: whether a maximum beyond the bound is the
    hypervisor's."""
    lat = run.latency_ms.get(chain, np.zeros(0))
    host = run.host
    around = steal_around(run.end_ns.get(chain, np.zeros(0, np.int64)), lat,
                          host.t_ns if host else np.zeros(0, np.int64),
                          host.steal_ms if host else np.zeros((0, 0)))
    split = split_by_steal(lat, around)
    if bound is not None:
        q, over = split["quiet_steal_ms"], lat > bound  # (NaN, no sample near: in neither)
        split["bound_ms"] = bound
        split["above_bound"] = {"quiet": int((over & (around <= q)).sum()),
                                "noisy": int((over & (around > q)).sum())}
    return split


def gc_report(run: MethodRun, chain: str | None, bound: float | None) -> dict:
    """Python's collector in a run: per executor process its collections and longest pause,
    and for ``chain`` (the critical one) how many of its instances had a collection of their
    own process inside them, and of those above ``bound``."""
    out: dict = {"by_executor": {e: gc_summary(p) for e, p in run.gc_ns.items()}}
    if chain is None or chain not in run.end_ns:
        return out
    ex = run.executor_of[chain]
    end, lat = run.end_ns[chain], run.latency_ms[chain]
    c, hit = gc_instances(end, lat, run.gc_ns[ex])
    c = {"chain": chain, "executor": ex, **c}
    if bound is not None:
        over = lat > bound
        c.update(bound_ms=bound, above_bound=int(over.sum()),
                 above_bound_during_a_collection=int((over & hit).sum()))
    out["critical"] = c
    return out


@dataclasses.dataclass
class Kpis:
    """Per chain and method, the latency summary with the skipped expiries (``missed``) and
    the time outside the callbacks; PAAM's request stages in the measured run (µs); per method
    the host's steal, every chain's instances split by it, and the collector; and what the
    CPU backend's device core is asked for per bucket (None on cuda)."""

    chains: dict[str, dict[str, dict[str, Any]]]
    stages_in_run: dict[str, dict]
    host: dict[str, dict]
    by_steal: dict[str, dict]
    gc: dict[str, dict]
    demand: dict[str, list[float]] | None


def compute_kpis(config: Config, spec: SystemSpec, methods: list[str], runs: Runs,
                 bound: Bound, placement: Placement) -> Kpis:
    """The KPIs of every method's measured run."""
    results = runs.results
    stages: dict[str, dict] = {}
    paam = results.get("PAAM")
    if paam is not None and len(paam.stages_us):
        st = paam.stages_us
        stages = {name: summarize(st[:, j]) for j, name in enumerate(STAGES)}
        stages["server overhead"] = summarize(st.sum(axis=1))
    chains: dict[str, dict[str, dict[str, Any]]] = {}
    for ch in sorted(spec.chains, key=lambda c: -c.priority):
        for m in methods:
            s = summarize(results[m].latency_ms.get(ch.name, np.array([])))
            s["missed"] = results[m].missed.get(ch.name, 0)
            s["outside_callbacks_ms"] = summarize(results[m].gap_ms.get(ch.name, []))
            chains.setdefault(ch.name, {})[m] = s
    # the host: what it took from the CPUs in each measured run, and every chain's instances
    # apart for where it left them alone
    host, by_steal = {}, {}
    executor_cpus = placement.mapping.values()
    for m in methods:
        r = results[m]
        host[m] = host_summary(r.host, executor_cpus) if r.host is not None else \
            {"error": "not sampled"}
        if "error" not in host[m]:
            by_steal[m] = {ch.name: latency_by_steal(r, ch.name, num(bound.plain[ch.name]))
                           for ch in sorted(spec.chains, key=lambda c: -c.priority)}
    top = critical_chain(spec)
    gc = {m: gc_report(results[m], top.name if top else None,
                       num(bound.plain[top.name]) if top else None) for m in methods}
    demand = bucket_demand(spec) if config.backend == "cpu" else None  # the device core's
    return Kpis(chains=chains, stages_in_run=stages, host=host, by_steal=by_steal, gc=gc,
                demand=demand)


@dataclasses.dataclass
class Outcome:
    """Everything a report and the figures are written from."""

    config: Config
    spec: SystemSpec
    methods: list[str]
    meta: dict[str, Any]
    placement: Placement
    fair: dict[str, int] | None
    runs: Runs
    bound: Bound
    kpis: Kpis
