"""The case study's settings: :class:`Config`, the whole run's (built once from the command line
by :mod:`.cli`), and :class:`ProcessConfig`, one executor process's (handed to the process).

The field names are the command line's option names: the summary's ``params`` are the fields,
and paamd's option helpers of :mod:`paam_experiments.common` read and clear them by name (an
option that cannot apply on the machine is cleared there, so that the summary says what ran).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from paam_experiments import common
from paam_experiments.case_study2 import graph


@dataclasses.dataclass
class Config:
    """The settings of one ``paam eval case-study-2`` (defaults: the command line's)."""
    setups: str | None = None          # "4ST,MT" or one of them (None: by --quick)
    methods: str = "ros2,picas,paam"
    duration: float = 600.0            # s per setup and method
    warmup: float = 2.0                # s not recorded
    scale: float = 1.0                 # on the run times and segments
    gpu_ms: float = 1.0                # GPU segment before --scale
    tpu_ms: float = 5.0                # TPU segment before --scale
    backend: str = "cpu"
    rt: str = "auto"
    direct_keeps_priority: bool = False
    wait: str = "suspend"
    hot_wait: str | None = None
    request_priority: str = "chain"
    segments: str = "sync"
    # paamd's options (common.add_server_arguments)
    server_poll_us: str | None = None
    server_pin: bool = False
    server_cores: int | None = None
    server_spin_buckets: int | None = None
    server_cuda_wait: str | None = None
    dispatcher_priority: int | None = None
    keep_awake: bool = False
    gc: str = "default"
    executor_wait: str = "own"
    mt_executor: str = "partitioned"
    hot_lanes: int = 1
    mt_hot_threads: int = 0
    intersection_groups: str = "node"
    e0_executor: str = "rclpy"
    switch_interval_ms: float | None = None
    dds_cpus: str = "executor"
    cpu_probe: bool = False
    quick: bool = False
    replot: bool = False
    inputs: str = ""
    out: str = "results/eval/case-study-2"
    # the enclosing command line's own values (``paam``'s command, ``eval``'s experiment):
    # written into the summary's params before the fields
    invocation: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def gpu_ms_eff(self) -> float:
        """The GPU segment as run (ms)."""
        return self.gpu_ms * self.scale

    @property
    def tpu_ms_eff(self) -> float:
        """The TPU segment as run (ms)."""
        return self.tpu_ms * self.scale

    def setup_names(self) -> list[str]:
        return [s.strip().upper() for s in (self.setups or "").split(",") if s.strip()]

    def method_names(self) -> list[str]:
        """``methods`` as method names (ROS 2, PiCAS, PAAM); exits naming the keys."""
        return common.parse_methods(self.methods)

    def params(self) -> dict[str, Any]:
        """The summary's ``params``: the command line's values as run."""
        out = dict(self.invocation)
        out.update((f.name, getattr(self, f.name)) for f in dataclasses.fields(self)
                   if f.name != "invocation")
        out.update(gpu_ms_eff=self.gpu_ms_eff, tpu_ms_eff=self.tpu_ms_eff)
        return out


def resolve(cfg: Config) -> Config:
    """``cfg`` with --quick applied and --setups defaulted, checked: exits naming the option
    where a value is out of range or options do not go together."""
    if cfg.quick:
        cfg = dataclasses.replace(cfg, scale=min(cfg.scale, 0.2),
                                  duration=min(cfg.duration, 3.0),
                                  warmup=min(cfg.warmup, 1.0))
    if cfg.setups is None:
        cfg = dataclasses.replace(cfg, setups="4ST" if cfg.quick else "4ST,MT")
    cfg.method_names()
    setups = cfg.setup_names()
    if not setups or any(s not in graph.SETUPS for s in setups):
        raise SystemExit("--setups: choose from 4ST, MT")
    if cfg.scale <= 0 or cfg.duration <= 0 or cfg.gpu_ms < 0 or cfg.tpu_ms < 0:
        raise SystemExit("--scale and --duration must be positive, segments not negative")
    if not 1 <= cfg.hot_lanes <= 8:
        raise SystemExit(f"--hot-lanes: 1 to 8, not {cfg.hot_lanes}")
    n = len(graph.EXECUTORS)
    if not 0 <= cfg.mt_hot_threads < n:
        raise SystemExit(f"--mt-hot-threads: 0 to {n - 1} (one thread at least must run any "
                         f"callback), not {cfg.mt_hot_threads}")
    if cfg.switch_interval_ms is not None and not cfg.switch_interval_ms > 0:
        raise SystemExit(f"--switch-interval-ms: above 0, not {cfg.switch_interval_ms}")
    if cfg.e0_executor == "cpp" and cfg.segments == "async":
        raise SystemExit("--e0-executor cpp runs synchronous segments only (no --segments "
                         "async)")
    if cfg.mt_hot_threads and cfg.mt_executor != "shared":
        raise SystemExit("--mt-hot-threads needs --mt-executor shared (the partitioned MT's "
                         "threads each run their own executor's nodes)")
    return cfg


@dataclasses.dataclass
class ProcessConfig:
    """One executor process's settings (defaults: the command line's), pickled to the process
    the parent spawns. Segments and times are as run (``--scale`` applied)."""
    name: str = "E0"                   # its executors, "+"-joined
    executors: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # -> nodes
    cpus: dict[str, int] = dataclasses.field(default_factory=dict)  # executor -> its core
    method: str = "paam"               # ros2 | picas | paam
    setup: str = "4ST"
    scale: float = 1.0
    gpu_ms: float = 1.0
    tpu_ms: float = 5.0
    backend: str = "cpu"
    device_cpu: int = -2               # the GPU stand-in's core (cpu backend)
    tpu_cpu: int | None = None         # the TPU stand-in's core
    gpu_socket: str | None = None      # PAAM: the GPU paamd's
    tpu_socket: str | None = None      # PAAM: the TPU paamd's
    rt: str = "auto"
    direct_keeps_priority: bool = False
    topic_prefix: str = "/paam_eval_cs2"
    wait: str = "suspend"
    hot_wait: str | None = None        # the hot path's callbacks' wait (None: as wait)
    request_priority: str = "chain"
    segments: str = "sync"
    cpu_probe: bool = False
    warmup_s: float = 2.0
    duration_s: float = 600.0
    gc: str = "default"
    executor_wait: str = "own"
    helper_cpus: list[int] | None = None  # the process's other threads' cores (None: its own)
    shared_mt: bool = False            # MT as one MultiThreadedPicasExecutor
    mt_hot_threads: int = 0
    switch_interval_ms: float | None = None
    intersection_groups: str = "node"
    e0_executor: str = "rclpy"
    priorities: dict[str, int] = dataclasses.field(
        default_factory=lambda: dict(graph.EXECUTOR_PRIORITIES))

    @property
    def hot_path_wait(self) -> str:
        return self.hot_wait or self.wait

    def drops_gpu_priority(self) -> bool:
        """Whether a direct GPU kernel runs on the callback's thread at SCHED_OTHER nice 0 (on
        the cpu backend the stand-in's kernel runs on that thread, as a GPU time-slices
        contexts whatever their CPU priority)."""
        return (self.method != "paam" and self.backend == "cpu"
                and not self.direct_keeps_priority)

    def drops_tpu_priority(self) -> bool:
        """As :meth:`drops_gpu_priority` for the TPU stand-in (always the cpu backend)."""
        return self.method != "paam" and not self.direct_keeps_priority
