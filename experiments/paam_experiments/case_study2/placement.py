"""Where the case study's threads run: the executors' cores (the paper's 2-5 mapped onto this
machine), the GPU and TPU stand-ins' cores, paamd's cores and the executor processes' other
threads (Fast DDS's).

On the CPU backend one core plays the GPU (the last one) and the TPU gets a core of its own
when one is left; the four executor cores are mapped modulo onto the cores beside the device
core: all onto core 0 on a 2-core machine (then the TPU shares the GPU's core).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from paam_experiments import common
from paam_experiments.case_study2 import graph
from paam_experiments.case_study2.config import Config


@dataclasses.dataclass
class Placement:
    executor_cpus: dict[str, int]      # 4ST executor -> its core
    device_cpu: int = -2               # the GPU stand-in's core (-2: none, the cuda backend)
    tpu_cpu: int = -1                  # the TPU stand-in's core
    tpu_note: str = ""                 # whether the TPU stand-in has a core of its own
    host_cpus: list[int] = dataclasses.field(default_factory=list)  # the cores the run may use
    server_cpus: list[int] = dataclasses.field(default_factory=list)  # paamd's: the cores left

    def shares_cores(self) -> bool:
        """Whether executors share a core, or paamd has none of its own."""
        return (len(set(self.executor_cpus.values())) < len(graph.EXECUTORS)
                or not self.server_cpus)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def placement_for(backend: str) -> Placement:
    """Executor cores (the paper's 2-5 mapped onto the cores beside the device core), the GPU
    stand-in's core and the TPU stand-in's core."""
    cpus = common.host_cpus(backend)
    dev = common.device_cpu() if backend == "cpu" else -2
    ex_cpus = {e.name: common.map_cpu(e.cpu, cpus) for e in graph.EXECUTORS}
    spare = [c for c in cpus if c not in ex_cpus.values()]
    if spare:
        tpu, tpu_note = spare[-1], "own core"
    elif backend == "cpu" and dev >= 0:
        tpu, tpu_note = dev, "shares the GPU stand-in's core (no core left)"
    else:
        tpu, tpu_note = cpus[-1], "shares an executor core (no core left)"
    # the servers' threads (dispatchers, control, CUDA workers) on the cores left, if any
    server_cpus = [c for c in spare if c not in (tpu, dev)]
    return Placement(executor_cpus=ex_cpus, device_cpu=dev, tpu_cpu=tpu, tpu_note=tpu_note,
                     host_cpus=cpus, server_cpus=server_cpus)


def helper_cpus(placement: Placement, cfg: Config) -> list[int] | None:
    """Where the executor processes' threads other than their executors run (Fast DDS's
    receive and event threads, started with the rclpy context): None for the process's own
    executor cores (``--dds-cpus executor``, as ``taskset`` on a whole process), else the
    cores no executor or stand-in uses (``spare``: the servers' cores), where there are any."""
    if cfg.dds_cpus == "spare" and placement.server_cpus:
        return list(placement.server_cpus)
    return None


def helper_cpus_label(placement: Placement, cfg: Config) -> str:
    cpus = helper_cpus(placement, cfg)
    if cpus is not None:
        return "on cores " + common.cpu_ranges(cpus)
    return "on their executors' cores" + (" (--dds-cpus spare: no core left)"
                                          if cfg.dds_cpus == "spare" else "")


def cores_line(placement: Placement, cfg: Config, sep: str = " ") -> str:
    """The executors', stand-ins' and DDS threads' cores (``sep`` before a stand-in's core)."""
    p = placement
    return (", ".join(f"{k}->{v}" for k, v in p.executor_cpus.items())
            + (f"; GPU stand-in{sep}{p.device_cpu}" if cfg.backend == "cpu" else "")
            + f"; TPU stand-in{sep}{p.tpu_cpu} ({p.tpu_note}); the executor processes' "
            f"other threads (DDS's) {helper_cpus_label(p, cfg)}")
