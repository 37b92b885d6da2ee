"""``paam eval case-study-1``: the PAAM paper's case study 1 (Sec. V-A, Figs. 9 and 10) as real
ROS 2 processes.

The chain set of ``case_study_1.yaml`` (shipped in ``paam.examples``: eight chains, six critical
and two best-effort, every callback a CPU part then a 10 ms accelerator segment) runs as one
rclpy process per executor. A chain's first callback is a timer of the chain's period; each
later callback subscribes to its predecessor's topic. Each callback burns its CPU WCET (thread
CPU time) and then runs its segment, the ``spin`` kernel. The chain latency of an instance runs
from its timer's expiry to the end of its last callback. Three methods:

* ``ROS 2``: rclpy's SingleThreadedExecutor (SCHED_OTHER; stock ROS 2 has no priority knob),
  direct invocation (every process runs its kernels itself: on a GPU one context per process,
  time-sliced by the driver);
* ``PiCAS``: ``paam.ros.PicasExecutor`` with chain-inherited callback priorities and the
  executors' OS priorities (SCHED_FIFO when permitted, else a nice ladder), direct invocation;
* ``PAAM``: the same executors, segments through paamd (chain priorities in 6 buckets).

Beside them the analysis bound (``paam analyze`` on the scaled system this run writes, with the
server overhead epsilon measured in a PAAM calibration run and the preemption cost
``--preemption-ms``), twice: with the paper's WCETs, and with each callback's WCET raised by the
rclpy/Python cost this machine measured (the analysis assumes callbacks cost their declared
WCET, nothing more).

On the CPU backend one core plays the device. Two things follow. A direct kernel runs on the
calling thread, so it would inherit the executor's SCHED_FIFO priority and get a priority-driven
device that no GPU offers: the experiment drops the thread to SCHED_OTHER for the kernel, as a
GPU time-slices contexts whatever their CPU priority (``--direct-keeps-priority`` turns that
off). And the case study's executor CPUs (2-7) are mapped onto the cores left beside the device
core, modulo their number (all onto core 0 on a 2-core machine).

``--scale`` multiplies every time (periods, WCETs, segments): 1 is the paper's system; a 2-core
machine runs it at 0.25 (10 ms segments become 2.5 ms).
Writes ``latency.csv`` (every chain instance: its latency and end, s from the run's start),
``paam_stages.csv`` (paamd's stages of every request of the calibration and the measured PAAM
run), ``host_stat.csv`` (/proc/stat each second of each measured run: what the host, a
hypervisor, took from each CPU), ``summary.csv``, ``summary.json``, ``summary.txt``,
``system_scaled.yaml`` (what the bound analyses: ``paam analyze`` it), ``fig9_max_latency.png``,
``fig10_distributions.png`` and ``fig10b_host_steal.png`` (the critical chain's latency over
time beside the steal, with its bound).
"""
from __future__ import annotations

import argparse
import dataclasses

from paam_experiments.case_study1 import experiment
from paam_experiments.case_study1.config import Config
from paam_experiments.common.args import (add_executor_wait_argument, add_gc_argument,
                                          add_keep_awake_argument, add_server_arguments)
from paam_experiments.common.server import ServerOptions

_DEFAULT = Config()


def fair_buckets_arg(text: str) -> str | int:
    """``--fair-buckets``: "auto" or a number of buckets."""
    if text == "auto":
        return text
    if text.isdigit():
        return int(text)
    raise argparse.ArgumentTypeError(f"expected 'auto' or a number of buckets, got {text!r}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = _DEFAULT
    p.add_argument("--system", default=d.system,
                   help="chain set (default: the paper's case study 1, shipped with paam)")
    p.add_argument("--scale", type=float, default=d.scale,
                   help="factor on every time of the system (default 1: the paper's system)")
    p.add_argument("--duration", type=float, default=d.duration,
                   help="seconds per method (default 600, the paper's 10 minutes)")
    p.add_argument("--methods", default=d.methods, help="subset of ros2, picas, paam")
    p.add_argument("--backend", default=d.backend, choices=["cpu", "cuda"])
    p.add_argument("--rt", default=d.rt, choices=["auto", "fifo", "nice"],
                   help="executor OS priorities for PiCAS and PAAM: SCHED_FIFO when permitted "
                        "else a nice ladder (auto), SCHED_FIFO only, or the nice ladder only "
                        "(what a machine that denies SCHED_FIFO gets; paamd then runs without "
                        "--rt, its workers on its nice ladder)")
    p.add_argument("--fair-buckets", default=d.fair_buckets, type=fair_buckets_arg,
                   help="cpu backend: how many of the lowest buckets paamd keeps off SCHED_FIFO "
                        "(its --fair-buckets): auto (default), those that hold only best-effort "
                        "chains, at least the lowest, so that best-effort load cannot use up "
                        "the kernel's real-time budget on the device core; or a number")
    p.add_argument("--lock-memory", action="store_true",
                   help="PiCAS's and PAAM's executors lock their memory after their setup "
                        "(paam.ros.rt.lock_memory: mlockall where permitted without limit, and "
                        "malloc keeps what it frees), and so does paamd (its --lock-memory), so "
                        "that no page fault lands in a callback or on a request's path")
    p.add_argument("--preemption-ms", type=float, default=d.preemption_ms,
                   help="kappa for the bound (default: 0.02 on the cpu backend, 0.13 on cuda, "
                        "docs/gpu.md)")
    p.add_argument("--overhead-ms", type=float, default=d.overhead_ms,
                   help="epsilon for the bound (default: the largest server overhead of a "
                        "request under load, measured in the calibration run)")
    p.add_argument("--calibration", type=float, default=d.calibration,
                   help="seconds of a first PAAM run whose measurements feed the bound: epsilon "
                        "under load and the rclpy cost (default 30; 0: take them from the "
                        "measured PAAM run itself, which makes the bound circular)")
    p.add_argument("--chains", default=d.chains,
                   help="comma-separated subset of the chains to run (default: all)")
    p.add_argument("--server-as-shipped", action="store_true",
                   help="run paamd's dispatcher at normal priority (paamd --dispatcher-priority "
                        "0), to show the priority inversion that --rt's raised dispatcher removes")
    p.add_argument("--direct-keeps-priority", action="store_true",
                   help="cpu backend: let direct kernels run at the executor's OS priority")
    p.add_argument("--wait", default=d.wait, choices=["suspend", "hybrid", "spin"],
                   help="how PAAM's executors wait for paamd, in place of the system's `wait` "
                        "(the bound follows: a spinning executor interferes with the lower "
                        "ones on its core for its whole segments); only an executor that is the "
                        "most urgent on its core spins, the others suspend")
    add_server_arguments(p)
    p.add_argument("--server-queue", default=None, choices=("fifo", "edf"),
                   help="the order paamd serves a bucket in (its --queue): fifo (paamd's "
                        "default), by chain priority; edf, by absolute deadline (each PAAM "
                        "request carries its chain instance's release, and each client the "
                        "chain's deadline). The bound column stays the fixed-priority "
                        "analysis', which does not cover edf (docs/analysis.md)")
    add_keep_awake_argument(p)
    add_gc_argument(p)
    add_executor_wait_argument(p)
    p.add_argument("--quick", action="store_true",
                   help="CI smoke scale: --scale 0.2, 2.5 s per method, chains 1-3 and be1")
    p.add_argument("--out", default=d.out)


def config_from_args(args: argparse.Namespace) -> Config:
    """The parsed command line as a :class:`Config`."""
    own = {f.name: getattr(args, f.name) for f in dataclasses.fields(Config)
           if f.name != "server"}
    return Config(**own, server=ServerOptions.from_args(args))


def run(args: argparse.Namespace) -> int:
    return experiment.run(config_from_args(args))
