"""The schedulability study of the PAAM paper (Fig. 14), on random chain sets.

(a) fraction of schedulable chain sets versus the number of chains (4 callbacks per chain, one
accelerator, accelerator:CPU utilization 1:1); (b) versus the accelerator:CPU utilization ratio,
1:9 to 7:3, at a fixed number of chains. Each point analyses ``sets`` random sets; the sets are
drawn in C++ (``paam._core.rta.generate_chain_set``: UUniFast-Discard utilizations, log-uniform
periods, rate-monotonic chain priorities, worst-fit decreasing chains onto executors) from a
seed mixed with (experiment, point, set index), so results do not depend on batching or on the
number of threads. Each set is analysed three times: with the PAAM bound (min of Lemmas 2 and
3) and with each lemma alone, to show what taking the minimum buys.
"""
from __future__ import annotations

import csv
import json
import os
import platform
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from paam import figures

RATIOS = [(1, 9), (2, 8), (3, 7), (4, 6), (5, 5), (6, 4), (7, 3)]


@dataclass
class GeneratorConfig:
    """Random chain sets (see core/src/analysis/generator.h). Times in ms."""
    callbacks_per_chain: int = 4
    cpus: int = 4
    executors_per_cpu: int = 4
    utilization_per_chain: float = 0.03
    period_min: float = 10.0
    period_max: float = 1000.0
    buckets: int = 4
    overhead: float = 0.05
    preemption: float = 0.13
    wait: str = "suspend"


@dataclass
class StudyConfig:
    sets: int = 1000
    seed: int = 2026
    chains: list[int] = field(default_factory=lambda: list(range(2, 25, 2)))
    ratios: list[tuple[int, int]] = field(default_factory=lambda: list(RATIOS))
    chains_for_ratios: int = 14
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    jobs: int = 0      # threads; 0 = every CPU
    batch: int = 25    # sets per C++ call (one progress-bar step)


@dataclass
class Point:
    experiment: str    # "chains" or "ratio"
    x: str             # the x value as shown (e.g. "12" or "3:7")
    chains: int
    accelerator_share: float
    sets: int = 0
    schedulable: int = 0              # PAAM: min(Lemma 2, Lemma 3)
    schedulable_per_segment: int = 0  # Lemma 2 only
    schedulable_per_chain: int = 0    # Lemma 3 only

    def fraction(self, which: str = "min") -> float:
        count = {"min": self.schedulable, "per-segment": self.schedulable_per_segment,
                 "per-chain": self.schedulable_per_chain}[which]
        return count / self.sets if self.sets else 0.0


def _params(gen: GeneratorConfig, chains: int, share: float):
    from paam import _core
    rta = _core.rta
    p = rta.GeneratorParams()
    p.chains = chains
    p.callbacks_per_chain = gen.callbacks_per_chain
    p.cpus = gen.cpus
    p.executors_per_cpu = gen.executors_per_cpu
    p.utilization_per_chain = gen.utilization_per_chain
    p.accelerator_share = share
    p.period_min = gen.period_min
    p.period_max = gen.period_max
    p.buckets = gen.buckets
    p.overhead = gen.overhead
    p.preemption = gen.preemption
    p.wait = rta.Wait.SPIN if gen.wait == "spin" else rta.Wait.SUSPEND
    return p


def points(config: StudyConfig) -> list[Point]:
    pts = [Point("chains", str(n), n, 0.5) for n in config.chains]
    pts += [Point("ratio", f"{a}:{c}", config.chains_for_ratios, a / (a + c))
            for a, c in config.ratios]
    return pts


def run(config: StudyConfig, progress: Callable[[int], None] | None = None) -> list[Point]:
    """Analyse every point's sets; ``progress(n)`` is called as n more sets are done."""
    from paam import _core
    rta = _core.rta
    pts = points(config)
    jobs = config.jobs or os.cpu_count() or 1
    work = []
    for index, pt in enumerate(pts):
        params = _params(config.generator, pt.chains, pt.accelerator_share)
        rta.generate_chain_set(params, 0)  # raises ValueError early on bad parameters
        point_id = (0 if pt.experiment == "chains" else 1) << 32 | index
        for first in range(0, config.sets, config.batch):
            work.append((pt, params, point_id, first, min(config.batch, config.sets - first)))

    def one(item):
        pt, params, point_id, first, count = item
        return pt, rta.run_study_batch(params, config.seed, point_id, first, count)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for pt, counts in pool.map(one, work):
            pt.sets += counts.sets
            pt.schedulable += counts.schedulable_min
            pt.schedulable_per_segment += counts.schedulable_per_segment
            pt.schedulable_per_chain += counts.schedulable_per_chain
            if progress:
                progress(counts.sets)
    return pts


def write_results(config: StudyConfig, pts: list[Point], out: Path, elapsed_s: float) -> list[Path]:
    """CSV per experiment, the figure (PNG) and the parameters (JSON). Returns the files."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for experiment, name in (("chains", "fig14a_chains.csv"), ("ratio", "fig14b_ratio.csv")):
        path = out / name
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["experiment", "x", "chains", "accelerator_share", "sets",
                        "schedulable", "fraction", "fraction_lemma2_only",
                        "fraction_lemma3_only"])
            for p in pts:
                if p.experiment == experiment:
                    w.writerow([p.experiment, p.x, p.chains, f"{p.accelerator_share:.3f}",
                                p.sets, p.schedulable, f"{p.fraction():.4f}",
                                f"{p.fraction('per-segment'):.4f}",
                                f"{p.fraction('per-chain'):.4f}"])
        files.append(path)
    meta = out / "params.json"
    meta.write_text(json.dumps({
        "config": asdict(config), "elapsed_s": round(elapsed_s, 2),
        "machine": {"nproc": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
    }, indent=2) + "\n")
    files.append(meta)
    files.append(plot(config, pts, out / "fig14_schedulability.png"))
    return files


def plot(config: StudyConfig, pts: list[Point], path: Path) -> Path:
    plt = figures.pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    styles = [("min", "PAAM: min(Lemma 2, Lemma 3)", "-", "o"),
              ("per-segment", "Lemma 2 only (per segment)", "--", "s"),
              ("per-chain", "Lemma 3 only (per chain)", ":", "^")]
    for ax, experiment, xlabel, title in (
            (axes[0], "chains", "number of chains per set",
             "(a) accelerator:CPU utilization 1:1"),
            (axes[1], "ratio", "accelerator:CPU utilization ratio",
             f"(b) {config.chains_for_ratios} chains per set")):
        sel = [p for p in pts if p.experiment == experiment]
        xs = list(range(len(sel)))
        for which, label, line, marker in styles:
            ax.plot(xs, [p.fraction(which) for p in sel], line, marker=marker, label=label)
        ax.set_xticks(xs, [p.x for p in sel])
        ax.set_xlabel(xlabel)
        ax.set_ylabel("schedulable chain sets")
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="lower left", fontsize=8)
    g = config.generator
    fig.suptitle(f"Schedulability of random chain sets ({config.sets} per point; "
                 f"{g.cpus} CPUs x {g.executors_per_cpu} executors, 1 accelerator, "
                 f"{g.buckets} buckets, mean chain utilization {g.utilization_per_chain})",
                 fontsize=9)
    figures.save(fig, path, dpi=120)
    return path


def timed_run(config: StudyConfig, progress=None) -> tuple[list[Point], float]:
    start = time.perf_counter()
    pts = run(config, progress)
    return pts, time.perf_counter() - start
