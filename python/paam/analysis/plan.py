"""PiCAS planning: callback priorities, callbacks to executors, executors to CPUs, accelerator units.

What ``paam plan`` does, in order:

1. **Callback priorities** by PiCAS Algorithm 1: chains in ascending chain priority, their
   callbacks in chain order get 1, 2, 3, ... (so callbacks inherit their chain's rank).
2. **Accelerator units** of one type (accelerators sharing a ``type``): segments that name the
   type are given a unit by worst-fit decreasing on utilization A/T (largest first, each to the
   least loaded unit). Segments that name a unit keep it.
3. **Chain-aware allocation** (in the spirit of PiCAS, RTAS 2021): chains are placed one by one,
   critical chains first in descending priority, then best-effort chains. A chain goes whole
   onto one executor: either an existing one (if its load (E+A)/T stays <= 1) or a new executor
   on one of the CPUs. The planner analyses every candidate and takes the one with the fewest
   critical chains missing; among those, the one whose bound/deadline ratios are smallest
   compared chain by chain from the most critical down (critical chains are protected first);
   ties go to reusing an executor. Only when no whole placement is schedulable is the chain
   also tried split, callback by callback, over executors (sub-chains, with the hop cost
   epsilon'), and the better of the two kept.
4. **Executor priorities**: executors are created in descending chain-priority order and each
   new executor on a CPU gets the next lower OS priority there (``executor_priority``, then one
   less, ...): the executor of a more critical chain always preempts that of a less critical
   one (PiCAS executor priority assignment).

The result is a complete system description that ``paam analyze`` accepts.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from paam.analysis.bounds import Analysis, analyze
from paam.analysis.model import Callback, Chain, Executor, InputError, SystemSpec


@dataclass
class PlanOptions:
    cpus: list[int]
    executor_priority: int = 90   # OS priority of the first executor of each CPU
    wait: str = "suspend"         # wait mode of the executors the planner creates


def options_for(spec: SystemSpec, cpus: list[int] | None = None,
                executor_priority: int | None = None, wait: str | None = None) -> PlanOptions:
    """Plan options: command-line values, else the file's ``plan:`` section, else defaults
    (the CPUs of the executors the file already has)."""
    section = spec.plan or {}
    if cpus is None:
        cpus = section.get("cpus")
    if cpus is None:
        cpus = sorted({e.cpu for e in spec.executors.values()})
    if not isinstance(cpus, list) or not cpus or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus):
        raise InputError("plan: field 'cpus' must be a non-empty list of CPU numbers (give "
                         "--cpus or a plan: {cpus: [...]} section, or executors to take them from)")
    prio = executor_priority if executor_priority is not None else section.get(
        "executor_priority", 90)
    if isinstance(prio, bool) or not isinstance(prio, int):
        raise InputError(f"plan: field 'executor_priority' must be an integer, got {prio!r}")
    wait = wait or section.get("wait", "suspend")
    if wait not in ("spin", "suspend", "hybrid"):
        raise InputError(f"plan: field 'wait' must be spin, suspend or hybrid, got {wait!r}")
    return PlanOptions(cpus=sorted(set(cpus)), executor_priority=prio, wait=wait)


# --------------------------------------------------------------------------------------------

def assign_callback_priorities(spec: SystemSpec) -> None:
    """PiCAS Algorithm 1, in place."""
    p = 1
    for chain in sorted(spec.chains, key=lambda c: c.priority):
        for cb in chain.callbacks:
            cb.priority = p
            p += 1


def assign_accelerator_units(spec: SystemSpec) -> None:
    """Worst-fit decreasing of type-named segments onto the units of the type, in place."""
    units = spec.accelerator_types()
    load = {name: 0.0 for name in spec.accelerators}
    pending = []
    for chain in spec.chains:
        for cb in chain.callbacks:
            for seg in cb.segments:
                if seg.accelerator in spec.accelerators:
                    load[seg.accelerator] += seg.wcet / chain.period
                else:
                    pending.append((seg.wcet / chain.period, seg))
    pending.sort(key=lambda item: -item[0])
    for util, seg in pending:
        unit = min(units[seg.accelerator], key=lambda name: (load[name], name))
        seg.accelerator = unit
        load[unit] += util


def _chain_load(chain: Chain, callbacks: list[Callback] | None = None) -> float:
    cbs = chain.callbacks if callbacks is None else callbacks
    return sum(cb.wcet + sum(s.wcet for s in cb.segments) for cb in cbs) / chain.period


@dataclass
class _Score:
    misses: int                # placed critical chains that miss
    ratios: tuple[float, ...]  # bound/deadline of the placed critical chains, most critical first
    new: int                   # executors created by this placement

    def key(self) -> tuple:
        # Fewest misses; then protect the more critical chains first (lexicographic); then
        # fewer executors. Rounding keeps float noise from deciding.
        return (self.misses, tuple(round(r, 9) for r in self.ratios), self.new)


class _Planner:
    def __init__(self, spec: SystemSpec, options: PlanOptions) -> None:
        self.spec = spec
        self.options = options
        self.executors: dict[str, Executor] = {}
        self.per_cpu: dict[int, int] = {cpu: 0 for cpu in options.cpus}
        self.placed: list[Chain] = []
        self.load: dict[str, float] = {}

    def _score(self, chains: list[Chain], executors: dict[str, Executor], new: int) -> _Score:
        trial = replace(self.spec, executors=executors, chains=chains)
        result: Analysis = analyze(trial, stop_at_deadline=False)
        critical = sorted((c for c in result.chains if not c.best_effort),
                          key=lambda c: -c.priority)
        misses = sum(not c.schedulable for c in critical)
        return _Score(misses, tuple(c.wcrt / c.deadline for c in critical), new)

    def _candidates(self, extra: dict[str, Executor], load: float,
                    pending: dict[str, float] | None = None):
        """(executor, is_new) for every existing executor with room and a new one per CPU.
        ``pending``: load already put on executors by the placement being built."""
        pending = pending or {}
        for ex in list(self.executors.values()) + list(extra.values()):
            used = self.load.get(ex.name, 0.0) + pending.get(ex.name, 0.0)
            if used + load <= 1.0 + 1e-12:
                yield ex, False
        for cpu in self.options.cpus:
            yield self._new_executor_after(cpu, extra), True

    def _new_executor_after(self, cpu: int, extra: dict[str, Executor]) -> Executor:
        k = self.per_cpu[cpu] + sum(1 for e in extra.values() if e.cpu == cpu)
        return Executor(name=f"cpu{cpu}_ex{k}", cpu=cpu,
                        priority=self.options.executor_priority - k, wait=self.options.wait)

    def place(self, chain: Chain) -> None:
        whole = self._place_whole(chain)
        if whole[0].misses == 0 or len(chain.callbacks) == 1:
            self._commit(*whole[1:])
            return
        split = self._place_split(chain)
        best = split if split[0].key() < whole[0].key() else whole
        self._commit(*best[1:])

    def _place_whole(self, chain: Chain):
        best = None
        for ex, is_new in self._candidates({}, _chain_load(chain)):
            placed = replace(chain, callbacks=[replace(cb, executor=ex.name)
                                                for cb in chain.callbacks])
            executors = dict(self.executors)
            executors[ex.name] = ex
            score = self._score(self.placed + [placed], executors, int(is_new))
            if best is None or score.key() < best[0].key():
                best = (score, placed, {ex.name: ex} if is_new else {})
        return best

    def _place_split(self, chain: Chain):
        done: list[Callback] = []
        created: dict[str, Executor] = {}
        pending: dict[str, float] = {}
        score = None
        for cb in chain.callbacks:
            best = None
            load = _chain_load(chain, [cb])
            for ex, is_new in self._candidates(created, load, pending):
                partial = replace(chain, callbacks=done + [replace(cb, executor=ex.name)])
                executors = {**self.executors, **created, ex.name: ex}
                s = self._score(self.placed + [partial], executors, len(created) + int(is_new))
                if best is None or s.key() < best[0].key():
                    best = (s, ex, is_new)
            score, ex, is_new = best
            done.append(replace(cb, executor=ex.name))
            pending[ex.name] = pending.get(ex.name, 0.0) + load
            if is_new:
                created[ex.name] = ex
        return score, replace(chain, callbacks=done), created

    def _commit(self, chain: Chain, created: dict[str, Executor]) -> None:
        for ex in created.values():
            self.executors[ex.name] = ex
            self.per_cpu[ex.cpu] += 1
        for cb in chain.callbacks:
            self.load[cb.executor] = self.load.get(cb.executor, 0.0) + _chain_load(chain, [cb])
        self.placed.append(chain)


def plan(spec: SystemSpec, options: PlanOptions) -> SystemSpec:
    """A planned copy of ``spec`` (see the module docstring). ``spec`` is not modified."""
    out = spec.copy()
    assign_callback_priorities(out)
    assign_accelerator_units(out)
    planner = _Planner(out, options)
    order = sorted(out.chains, key=lambda c: (c.best_effort, -c.priority))
    for chain in order:
        planner.place(chain)
    by_name = {c.name: c for c in planner.placed}
    # Keep the input's chain order; executors sorted by CPU, then priority (highest first).
    executors = dict(sorted(planner.executors.items(),
                            key=lambda kv: (kv[1].cpu, -kv[1].priority)))
    return replace(out, executors=executors, chains=[by_name[c.name] for c in out.chains])
