"""Case study 1's chain set as this machine runs it: scaled, its executors mapped onto the
cores there are, the chains chosen, how PAAM's executors wait, which of paamd's buckets stay
off SCHED_FIFO, and the analysis bound."""
from __future__ import annotations

from paam.analysis.bounds import best_effort_buckets
from paam.analysis.model import SystemSpec, load_system
from paam_experiments.case_study1.config import CallbackPlan, ChainPlan
from paam_experiments.common.cpus import map_cpu


def scaled_system(path: str, scale: float, cpus: list[int]) -> tuple[SystemSpec, dict[str, int]]:
    """The system of ``path`` with every time times ``scale`` and executor CPUs mapped onto
    ``cpus``; returns (spec, {executor: mapped cpu})."""
    spec = load_system(path).copy()
    mapping = {}
    for ex in spec.executors.values():
        mapping[ex.name] = map_cpu(ex.cpu, cpus)
        ex.cpu = mapping[ex.name]
    for ch in spec.chains:
        ch.period *= scale
        if ch.deadline is not None:
            ch.deadline *= scale
        for cb in ch.callbacks:
            cb.wcet *= scale
            for s in cb.segments:
                s.wcet *= scale
    return spec, mapping


def select_chains(spec: SystemSpec, mapping: dict[str, int],
                  names: list[str]) -> dict[str, int]:
    """Keeps only the chains ``names`` in ``spec`` (all when empty) and the executors they use;
    returns ``mapping`` for those executors. Exits naming the chains that ``spec`` lacks."""
    if not names:
        return mapping
    unknown = sorted(set(names) - {c.name for c in spec.chains})
    if unknown:
        raise SystemExit(f"--chains: unknown {unknown}")
    spec.chains = [c for c in spec.chains if c.name in names]
    used = {cb.executor for c in spec.chains for cb in c.callbacks}
    spec.executors = {k: v for k, v in spec.executors.items() if k in used}
    return {k: v for k, v in mapping.items() if k in used}


def set_wait(spec: SystemSpec, wait: str) -> None:
    """Every executor waits ``wait``, except one below another on its core, which suspends: the
    most urgent executor's wake-up is the one worth saving, and each spinning executor adds its
    whole segments to the interference on the ones below it."""
    for ex in spec.executors.values():
        top = all(o.priority <= ex.priority for o in spec.executors.values() if o.cpu == ex.cpu)
        ex.wait = wait if top else "suspend"


def fair_buckets(spec: SystemSpec, backend: str, rt: str,
                 setting: str | int) -> dict[str, int] | None:
    """How many of the lowest buckets paamd's CPU backend keeps on its nice ladder (its
    --fair-buckets), per accelerator; None where that is not chosen (the cuda backend, or ``rt``
    nice, where no bucket gets SCHED_FIFO). ``setting`` "auto": the buckets that hold only
    best-effort chains, at least the lowest (paamd's own default with several buckets); a
    number: that many."""
    if backend != "cpu" or rt == "nice":
        return None
    out = {}
    best_effort = best_effort_buckets(spec) if setting == "auto" else {}
    for name, acc in spec.accelerators.items():
        if setting == "auto":
            out[name] = max(best_effort[name], 1 if acc.buckets > 1 else 0)
        elif setting > acc.buckets:
            raise SystemExit(f"--fair-buckets {setting}: {name} has {acc.buckets} bucket(s)")
        else:
            out[name] = setting
    return out


def critical_chain(spec: SystemSpec):
    """The most critical chain (None if all are best-effort): the one whose requests nothing
    outranks, whose maximum the bound is checked against first."""
    return max((c for c in spec.chains if not c.best_effort), key=lambda c: c.priority,
               default=None)


def chains_by_executor(spec: SystemSpec) -> dict[str, list[ChainPlan]]:
    """Each executor's chains as its process runs them. Exits where a chain's callbacks are on
    several executors (one process per executor runs a chain end to end)."""
    by_ex: dict[str, list[ChainPlan]] = {}
    for ch in spec.chains:
        ex_names = {cb.executor for cb in ch.callbacks}
        if len(ex_names) != 1:
            raise SystemExit(f"chain {ch.name}: callbacks on several executors are not supported "
                             "by this experiment")
        by_ex.setdefault(ex_names.pop(), []).append(ChainPlan(
            ch.name, ch.priority, ch.period, ch.best_effort,
            [CallbackPlan(cb.name, cb.wcet, [s.wcet for s in cb.segments])
             for cb in ch.callbacks],
            deadline=0.0 if ch.best_effort else (ch.deadline if ch.deadline is not None else ch.period)))
    return by_ex


def analysed_bounds(spec: SystemSpec, epsilon_ms: float, kappa_ms: float,
                    extra_cpu_ms: float = 0.0) -> tuple[dict[str, float], SystemSpec]:
    """Each chain's response-time bound (``paam analyze --full``) with the server overhead
    ``epsilon_ms``, the preemption cost ``kappa_ms`` and every callback's WCET raised by
    ``extra_cpu_ms``; with the system analysed."""
    from paam.analysis.bounds import analyze
    s = spec.copy()
    for acc in s.accelerators.values():
        acc.overhead, acc.preemption = epsilon_ms, kappa_ms
    for ch in s.chains:
        for cb in ch.callbacks:
            cb.wcet += extra_cpu_ms
    result = analyze(s, stop_at_deadline=False)
    return {c.name: c.wcrt for c in result.chains}, s
