"""Case study 1's options (:class:`Config`) and what one executor process is told to run
(:class:`ExecutorPlan`)."""
from __future__ import annotations

import dataclasses
from typing import Any

from paam import examples
from paam_experiments.common.methods import parse_methods
from paam_experiments.common.server import ServerOptions

#: the paper's case study 1, shipped with paam
DEFAULT_SYSTEM = examples.path("case_study_1")
#: the chains ``--quick`` runs where ``--chains`` names none
QUICK_CHAINS = "chain1,chain2,chain3,be1"


@dataclasses.dataclass
class Config:
    """The options of one ``paam eval case-study-1``, named as its command-line dests (the
    defaults are the command line's). paamd's own options are in ``server``; where one cannot
    be applied on this machine the run clears it there, so that ``params()`` says what ran."""

    system: str = str(DEFAULT_SYSTEM)
    scale: float = 1.0
    duration: float = 600.0
    methods: str = "ros2,picas,paam"
    rt: str = "auto"
    fair_buckets: str | int = "auto"
    lock_memory: bool = False
    preemption_ms: float | None = None
    overhead_ms: float | None = None
    calibration: float = 30.0
    chains: str = ""
    server_as_shipped: bool = False
    direct_keeps_priority: bool = False
    wait: str | None = None
    keep_awake: bool = False
    gc: str = "default"
    executor_wait: str = "own"
    quick: bool = False
    out: str = "results/eval/case-study-1"
    server: ServerOptions = dataclasses.field(default_factory=ServerOptions)

    @property
    def backend(self) -> str:
        return self.server.backend

    def apply_quick(self) -> None:
        """``--quick``: the CI smoke scale (times x0.2, 2.5 s per method, a 1.5 s calibration,
        chains 1-3 and be1 unless ``chains`` names others)."""
        if self.quick:
            self.scale = min(self.scale, 0.2)
            self.duration = min(self.duration, 2.5)
            self.calibration = min(self.calibration, 1.5)
            self.chains = self.chains or QUICK_CHAINS

    def check(self) -> list[str]:
        """The method names to run; exits on options that cannot run."""
        methods = parse_methods(self.methods)
        if self.scale <= 0 or self.duration <= 0:
            raise SystemExit("--scale and --duration must be positive")
        if self.calibration < 0:
            raise SystemExit("--calibration must be 0 (none) or positive")
        return methods

    def chain_names(self) -> list[str]:
        """``chains`` as a list (empty: all)."""
        return [c.strip() for c in self.chains.split(",") if c.strip()]

    def params(self) -> dict[str, Any]:
        """summary.json's ``params``: every option by its command-line dest."""
        server = dataclasses.asdict(self.server)
        backend = server.pop("backend")
        out: dict[str, Any] = {"command": "eval", "experiment": "case-study-1"}
        for f in dataclasses.fields(self):  # (in the command line's order)
            if f.name == "server":
                continue
            out[f.name] = getattr(self, f.name)
            if f.name == "methods":
                out["backend"] = backend
            elif f.name == "wait":
                out.update(server)
        return out


@dataclasses.dataclass
class CallbackPlan:
    """One callback: its CPU WCET and its accelerator segments (ms, scaled)."""

    name: str
    wcet: float
    segments: list[float]


@dataclasses.dataclass
class ChainPlan:
    """One chain as its executor runs it: a timer of ``period`` ms, then its callbacks in
    order, each after its predecessor's message."""

    name: str
    priority: int
    period: float
    best_effort: bool
    callbacks: list[CallbackPlan]
    deadline: float = 0.0  # ms; what PAAM's clients register as their relative deadline (0: none)


@dataclasses.dataclass
class ExecutorPlan:
    """What one executor process runs (it is pickled into the process): its chains, the method
    (``ros2``, ``picas`` or ``paam``), its core and OS priority, how its clients reach the
    device, and the run's timing."""

    method: str
    executor: str
    cpu: int
    os_priority: int
    wait: str
    best_effort: bool
    chains: list[ChainPlan]
    socket: str | None
    backend: str
    device_cpu: int
    rt: str
    direct_keeps_priority: bool
    lock_memory: bool
    topic_prefix: str
    warmup_s: float
    duration_s: float
    gc: str
    executor_wait: str
