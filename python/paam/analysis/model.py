"""The system description (YAML) of ``paam analyze`` and ``paam plan``: loading and checking.

Times are in milliseconds. The format::

    accelerators:
      gpu0: {buckets: 6, overhead: 0.05, preemption: 0.13}   # n, epsilon, kappa
    executors:
      ex1: {cpu: 2, priority: 90, wait: suspend}             # wait: spin | suspend | hybrid
    comm_cost: 0                                             # epsilon' per executor hop
    chains:
      - name: chain1
        priority: 8            # unique; larger = more critical
        period: 120
        deadline: 120          # optional, defaults to the period
        best_effort: false     # optional
        callbacks:
          - {name: c1_1, executor: ex1, wcet: 2, segments: [{accelerator: gpu0, wcet: 10}]}

Optional fields beyond that format (all may be left out):

- ``description``: text about the system (what it is, what the analysis should find);
  ``paam analyze`` prints it above its report.
- ``accelerators.<name>.slice``: the accelerator's server preempts its lower buckets in slices of
  this length (paamd ``--gpu-preempt --gpu-slice-us``); kappa is then the slice plus
  ``SLICE_LAUNCH_MS`` instead of ``preemption`` (docs/analysis.md, "Preemption in slices").
- ``accelerators.<name>.type``: units of one type (e.g. ``gpu0`` and ``gpu1`` of type ``gpu``);
  for ``paam plan`` a segment may name the type and the planner picks the unit (WFD).
- ``chains[].callbacks[].priority``: the callback priority (PiCAS Algorithm 1), written by
  ``paam plan``; the analysis itself uses chain priorities (callbacks inherit them).
- ``plan: {cpus: [...], executor_priority: 90, wait: suspend}``: inputs of ``paam plan``.
- ``chains[].callbacks[].segments[].model``: the model (served by paamd, docs/models.md) the
  segment runs; ``paam profile MODEL -o FILE`` sets the wcet of every segment that names it.
- ``models: {<name>: {...}}``: what ``paam profile`` measured for each model (its WCET estimate,
  the method, the distribution); kept as it is, not used by the analysis.

``hybrid`` waiting is analysed as ``spin`` (it may spin for the whole request).

Every problem raises :class:`InputError` with a message that names the chain (or executor or
accelerator) and the field.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

WAIT_MODES = ("spin", "suspend", "hybrid")

# Ranges of the analysis' integer fields (core/src/analysis/model.h): chain priorities are
# int64_t; buckets, CPUs and executor priorities are int. A value outside its range is bad
# input (exit 2), not a crash in the native binding.
INT32_RANGE = (-2**31, 2**31 - 1)
INT64_RANGE = (-2**63, 2**63 - 1)


#: What a more urgent kernel waits beyond the slice already running, for the lower kernels to see
#: the urgent word and leave the GPU (paamd's kSliceLaunchUs, core/src/backend/backend.h: it covers
#: every delay p99 measured with 20 us slices on an H100, docs/gpu.md).
SLICE_LAUNCH_MS = 0.015


class InputError(ValueError):
    """Raised when a system description is malformed; the message says where and why."""


@dataclass
class Accelerator:
    name: str
    buckets: int = 1
    overhead: float = 0.0
    preemption: float = 0.0
    type: str | None = None
    slice: float = 0.0  # > 0: lower buckets preempted in slices of this length (ms)

    def kappa(self) -> float:
        """The device-level preemption cost the analysis charges: the slice plus its launch when
        the lower buckets are preempted in slices, else the measured ``preemption``."""
        return self.slice + SLICE_LAUNCH_MS if self.slice > 0 else self.preemption


@dataclass
class Executor:
    name: str
    cpu: int
    priority: int
    wait: str = "suspend"


@dataclass
class Segment:
    accelerator: str
    wcet: float
    model: str | None = None  # the paamd model the segment runs (paam profile updates its wcet)


@dataclass
class Callback:
    name: str
    executor: str | None
    wcet: float
    segments: list[Segment] = field(default_factory=list)
    priority: int | None = None


@dataclass
class Chain:
    name: str
    priority: int
    period: float
    callbacks: list[Callback]
    deadline: float | None = None
    best_effort: bool = False

    @property
    def effective_deadline(self) -> float:
        return self.period if self.deadline is None else self.deadline


@dataclass
class SystemSpec:
    accelerators: dict[str, Accelerator]
    executors: dict[str, Executor]
    chains: list[Chain]
    comm_cost: float = 0.0
    plan: dict[str, Any] | None = None
    description: str | None = None
    models: dict[str, Any] | None = None  # paam profile's measurements, kept as they are

    def accelerator_types(self) -> dict[str, list[str]]:
        """type -> unit names, for accelerators that declare a type."""
        types: dict[str, list[str]] = {}
        for acc in self.accelerators.values():
            if acc.type:
                types.setdefault(acc.type, []).append(acc.name)
        return types

    def copy(self) -> "SystemSpec":
        return dataclasses.replace(
            self,
            accelerators={k: dataclasses.replace(v) for k, v in self.accelerators.items()},
            executors={k: dataclasses.replace(v) for k, v in self.executors.items()},
            chains=[dataclasses.replace(
                c, callbacks=[dataclasses.replace(
                    cb, segments=[dataclasses.replace(s) for s in cb.segments])
                    for cb in c.callbacks]) for c in self.chains],
            plan=dict(self.plan) if self.plan is not None else None,
            models=dict(self.models) if self.models is not None else None)


# --------------------------------------------------------------------------------------------
# Loading

def load_system(path: str | Path, *, for_planning: bool = False) -> SystemSpec:
    """Read and check a system description.

    :param for_planning: accept what ``paam plan`` fills in itself: callbacks without an
        executor, segments that name an accelerator type instead of a unit.
    :raises InputError: unreadable file, bad YAML, or a malformed description.
    """
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from exc
    return parse_system(data, for_planning=for_planning)


def _where(*parts: str) -> str:
    return ", ".join(p for p in parts if p)


def _mapping(value: Any, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _check_keys(obj: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(map(str, obj)) - allowed)
    if unknown:
        raise InputError(f"{where}: unknown field(s) {', '.join(repr(u) for u in unknown)} "
                         f"(allowed: {', '.join(sorted(allowed))})")


def _number(obj: dict, key: str, where: str, *, default: float | None = None,
            positive: bool = False) -> float:
    if key not in obj or obj[key] is None:
        if default is None:
            raise InputError(f"{where}: field '{key}' is missing")
        return default
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: field '{key}' must be a number (ms), got {value!r}")
    try:
        value = float(value)
    except OverflowError:  # an integer too large for a double
        raise InputError(f"{where}: field '{key}' must be finite, got {obj[key]!r}") from None
    if not math.isfinite(value):
        raise InputError(f"{where}: field '{key}' must be finite, got {value!r}")
    if positive and value <= 0:
        raise InputError(f"{where}: field '{key}' must be > 0, got {value:g}")
    if value < 0:
        raise InputError(f"{where}: field '{key}' must not be negative, got {value:g}")
    return value


def _integer(obj: dict, key: str, where: str, *, default: int | None = None,
             minimum: int | None = None, limits: tuple[int, int] = INT32_RANGE) -> int:
    if key not in obj or obj[key] is None:
        if default is None:
            raise InputError(f"{where}: field '{key}' is missing")
        return default
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: field '{key}' must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise InputError(f"{where}: field '{key}' must be at least {minimum}, got {value}")
    check_range(value, where, key, limits)
    return value


def check_range(value: int, where: str, key: str | None,
                limits: tuple[int, int] = INT32_RANGE) -> None:
    """Raise :class:`InputError` unless ``limits[0] <= value <= limits[1]`` (``key``: the
    field named in the message; ``None`` for a command-line option named by ``where``)."""
    low, high = limits
    if not low <= value <= high:
        field_ = f" field '{key}':" if key else ""
        raise InputError(f"{where}:{field_} {value} is out of range (must be between {low} "
                         f"and {high})")


def _name(value: Any, where: str, key: str = "name") -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool) or str(value) == "":
        raise InputError(f"{where}: field '{key}' must be a non-empty name, got {value!r}")
    return str(value)


def parse_system(data: Any, *, for_planning: bool = False) -> SystemSpec:
    """Check a loaded YAML document and build a :class:`SystemSpec` (see :func:`load_system`)."""
    top = _mapping(data, "system description")
    _check_keys(top, {"description", "accelerators", "executors", "comm_cost", "chains", "plan",
                      "models"}, "system description")
    description = top.get("description")
    if description is not None and not isinstance(description, str):
        raise InputError("system description: field 'description' must be text, "
                         f"got {type(description).__name__}")

    accelerators: dict[str, Accelerator] = {}
    for raw_name, raw in _mapping(top.get("accelerators"), "accelerators").items():
        name = _name(raw_name, "accelerators")
        where = f"accelerator '{name}'"
        obj = _mapping(raw, where)
        _check_keys(obj, {"buckets", "overhead", "preemption", "type", "slice"}, where)
        acc_type = obj.get("type")
        if acc_type is not None:
            acc_type = _name(acc_type, where, "type")
        accelerators[name] = Accelerator(
            name=name,
            buckets=_integer(obj, "buckets", where, default=1, minimum=1),
            overhead=_number(obj, "overhead", where, default=0.0),
            preemption=_number(obj, "preemption", where, default=0.0),
            type=acc_type,
            slice=_number(obj, "slice", where, default=0.0))
        if obj.get("slice") is not None and not 0 < accelerators[name].slice <= 10:
            raise InputError(f"{where}: field 'slice': the slice length must be above 0 and at most "
                             f"10 ms, got {obj['slice']}")
    types = {a.type for a in accelerators.values() if a.type}
    clash = types & set(accelerators)
    if clash:
        raise InputError(f"accelerator '{sorted(clash)[0]}': field 'type': a type may not "
                         "share its name with an accelerator unit")

    executors: dict[str, Executor] = {}
    seen_slot: dict[tuple[int, int], str] = {}
    for raw_name, raw in _mapping(top.get("executors"), "executors").items():
        name = _name(raw_name, "executors")
        where = f"executor '{name}'"
        obj = _mapping(raw, where)
        _check_keys(obj, {"cpu", "priority", "wait"}, where)
        wait = obj.get("wait", "suspend")
        if wait not in WAIT_MODES:
            raise InputError(f"{where}: field 'wait' must be one of {', '.join(WAIT_MODES)}, "
                             f"got {wait!r}")
        ex = Executor(name=name, cpu=_integer(obj, "cpu", where, minimum=0),
                      priority=_integer(obj, "priority", where), wait=wait)
        slot = (ex.cpu, ex.priority)
        if slot in seen_slot:
            raise InputError(f"{where}: field 'priority': {ex.priority} on cpu {ex.cpu} is "
                             f"already used by executor '{seen_slot[slot]}' (executors of one "
                             "CPU need distinct priorities)")
        seen_slot[slot] = name
        executors[name] = ex

    comm_cost = _number(top, "comm_cost", "system description", default=0.0)

    raw_chains = top.get("chains")
    if not isinstance(raw_chains, list) or not raw_chains:
        raise InputError("system description: field 'chains' must be a non-empty list")
    chains: list[Chain] = []
    names: set[str] = set()
    priorities: dict[int, str] = {}
    for index, raw in enumerate(raw_chains):
        obj = _mapping(raw, f"chain #{index + 1}")
        name = _name(obj.get("name"), f"chain #{index + 1}")
        where = f"chain '{name}'"
        _check_keys(obj, {"name", "priority", "period", "deadline", "best_effort", "callbacks"},
                    where)
        if name in names:
            raise InputError(f"{where}: field 'name': duplicate chain name")
        names.add(name)
        priority = _integer(obj, "priority", where, limits=INT64_RANGE)
        if priority in priorities:
            raise InputError(f"{where}: field 'priority': {priority} is already used by chain "
                             f"'{priorities[priority]}' (chain priorities must be unique)")
        priorities[priority] = name
        period = _number(obj, "period", where, positive=True)
        deadline = None
        if obj.get("deadline") is not None:
            deadline = _number(obj, "deadline", where, positive=True)
            if deadline > period:
                raise InputError(f"{where}: field 'deadline': {deadline:g} is above the period "
                                 f"{period:g} (the analysis needs deadlines <= periods)")
        best_effort = obj.get("best_effort", False)
        if not isinstance(best_effort, bool):
            raise InputError(f"{where}: field 'best_effort' must be true or false, "
                             f"got {best_effort!r}")
        raw_cbs = obj.get("callbacks")
        if not isinstance(raw_cbs, list) or not raw_cbs:
            raise InputError(f"{where}: field 'callbacks' must be a non-empty list")
        callbacks = [_parse_callback(cb, i, name, executors, accelerators, types, for_planning)
                     for i, cb in enumerate(raw_cbs)]
        chains.append(Chain(name=name, priority=priority, period=period, deadline=deadline,
                            best_effort=best_effort, callbacks=callbacks))

    plan = top.get("plan")
    if plan is not None:
        plan = _mapping(plan, "plan")
        _check_keys(plan, {"cpus", "executor_priority", "wait"}, "plan")
    models = top.get("models")
    if models is not None:
        models = _mapping(models, "models")
    return SystemSpec(accelerators=accelerators, executors=executors, chains=chains,
                      comm_cost=comm_cost, plan=plan, description=description, models=models)


def _parse_callback(raw: Any, index: int, chain: str, executors: dict[str, Executor],
                    accelerators: dict[str, Accelerator], types: set[str],
                    for_planning: bool) -> Callback:
    obj = _mapping(raw, f"chain '{chain}', callback #{index + 1}")
    name = _name(obj.get("name", f"{chain}_{index + 1}"), f"chain '{chain}', callback #{index + 1}")
    where = f"chain '{chain}', callback '{name}'"
    _check_keys(obj, {"name", "executor", "wcet", "segments", "priority"}, where)
    executor = obj.get("executor")
    if executor is None:
        if not for_planning:
            raise InputError(f"{where}: field 'executor' is missing")
    else:
        executor = _name(executor, where, "executor")
        if executor not in executors and not for_planning:
            known = ", ".join(sorted(executors)) or "none"
            raise InputError(f"{where}: field 'executor': unknown executor '{executor}' "
                             f"(known: {known})")
    wcet = _number(obj, "wcet", where)
    raw_segments = obj.get("segments") or []
    if not isinstance(raw_segments, list):
        raise InputError(f"{where}: field 'segments' must be a list")
    segments = []
    for j, raw_seg in enumerate(raw_segments):
        seg_where = f"{where}, segment #{j + 1}"
        seg = _mapping(raw_seg, seg_where)
        _check_keys(seg, {"accelerator", "wcet", "model"}, seg_where)
        acc = _name(seg.get("accelerator"), seg_where, "accelerator")
        if acc not in accelerators:
            if acc in types and not for_planning:
                raise InputError(f"{seg_where}: field 'accelerator': '{acc}' is an accelerator "
                                 "type, not a unit; run `paam plan` to assign units")
            if acc not in types:
                known = ", ".join(sorted(accelerators)) or "none"
                raise InputError(f"{seg_where}: field 'accelerator': unknown accelerator "
                                 f"'{acc}' (known: {known})")
        model = _name(seg["model"], seg_where, "model") if seg.get("model") is not None else None
        segments.append(Segment(accelerator=acc, wcet=_number(seg, "wcet", seg_where), model=model))
    priority = None
    if obj.get("priority") is not None:
        priority = _integer(obj, "priority", where, limits=INT64_RANGE)
    return Callback(name=name, executor=executor, wcet=wcet, segments=segments,
                    priority=priority)


# --------------------------------------------------------------------------------------------
# Writing

def to_yaml_data(spec: SystemSpec) -> dict[str, Any]:
    """The YAML document of a system (what :func:`parse_system` reads back)."""
    def acc(a: Accelerator) -> dict:
        d: dict[str, Any] = {"buckets": a.buckets, "overhead": a.overhead,
                             "preemption": a.preemption}
        if a.type:
            d["type"] = a.type
        if a.slice > 0:
            d["slice"] = a.slice
        return d

    def cb(c: Callback) -> dict:
        d: dict[str, Any] = {"name": c.name, "executor": c.executor, "wcet": c.wcet}
        if c.priority is not None:
            d["priority"] = c.priority
        d["segments"] = [{"accelerator": s.accelerator, "wcet": s.wcet}
                         | ({"model": s.model} if s.model else {}) for s in c.segments]
        return d

    chains = []
    for ch in spec.chains:
        d: dict[str, Any] = {"name": ch.name, "priority": ch.priority, "period": ch.period}
        if ch.deadline is not None:
            d["deadline"] = ch.deadline
        if ch.best_effort:
            d["best_effort"] = True
        d["callbacks"] = [cb(c) for c in ch.callbacks]
        chains.append(d)
    data: dict[str, Any] = {}
    if spec.description is not None:
        data["description"] = spec.description
    data |= {
        "accelerators": {a.name: acc(a) for a in spec.accelerators.values()},
        "executors": {e.name: {"cpu": e.cpu, "priority": e.priority, "wait": e.wait}
                      for e in spec.executors.values()},
        "comm_cost": spec.comm_cost,
        "chains": chains,
    }
    if spec.plan is not None:
        data["plan"] = spec.plan
    if spec.models is not None:
        data["models"] = spec.models
    return data


def dump_yaml(spec: SystemSpec) -> str:
    return yaml.safe_dump(to_yaml_data(spec), sort_keys=False, default_flow_style=None,
                          width=100)
