"""``paam eval case-study-2``'s command line: its options, and the one conversion of the parsed
namespace into the run's :class:`.config.Config`."""
from __future__ import annotations

import argparse
import dataclasses

from paam_experiments import common
from paam_experiments.case_study2 import graph
from paam_experiments.case_study2.config import Config

_D = Config()  # the options' defaults


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--setups", default=_D.setups,
                   help="subset of 4ST, MT (default both; with --quick 4ST)")
    p.add_argument("--methods", default=_D.methods, help="subset of ros2, picas, paam")
    p.add_argument("--duration", type=float, default=_D.duration,
                   help="seconds per setup and method (default 600, the paper's 10 minutes)")
    p.add_argument("--warmup", type=float, default=_D.warmup,
                   help="seconds not recorded (default 2)")
    p.add_argument("--scale", type=float, default=_D.scale,
                   help="factor on the run times and segments (default 1: the reference "
                        "system's run times); the periods stay the reference system's")
    p.add_argument("--gpu-ms", type=float, default=_D.gpu_ms,
                   help="GPU segment of every callback but the behavior planner's, before "
                        "--scale (default 1 ms)")
    p.add_argument("--tpu-ms", type=float, default=_D.tpu_ms,
                   help="TPU segment of the rear points transformer, before --scale "
                        "(default 5 ms)")
    p.add_argument("--backend", default=_D.backend, choices=["cpu", "cuda"],
                   help="GPU backend (the TPU stand-in is always the cpu backend)")
    p.add_argument("--rt", default=_D.rt, choices=["auto", "fifo", "nice"],
                   help="executor OS priorities for PiCAS and PAAM: SCHED_FIFO when permitted "
                        "else a nice ladder (auto), SCHED_FIFO only, or the nice ladder only "
                        "(paamd then runs without --rt, its dispatcher raised to nice -20)")
    p.add_argument("--direct-keeps-priority", action="store_true",
                   help="cpu backend: let direct kernels run at the executor's OS priority")
    p.add_argument("--wait", default=_D.wait, choices=["suspend", "hybrid", "spin"],
                   help="how PAAM's callbacks wait for paamd's answer (default suspend; the "
                        "direct CUDA baselines spin on a completion flag)")
    p.add_argument("--hot-wait", default=_D.hot_wait, choices=["suspend", "hybrid", "spin"],
                   help="how PAAM's hot-path callbacks wait for paamd's answer (default: as "
                        "--wait). With --server-spin-buckets 1, 'spin' gives the hot path "
                        "the fastest round trip at a busy core for its executor's waits only, "
                        "where --wait spin --server-poll-us always busies every core paamd has")
    p.add_argument("--request-priority", default=_D.request_priority,
                   choices=["chain", "executor"],
                   help="the priority paamd ranks a PAAM GPU request by: its callback's chain "
                        "priority (default, the paper's rule), or the most critical chain "
                        "priority of the callback's executor (an executor-wide ceiling: a "
                        "less critical callback's request then cannot keep the executor, and "
                        "the critical callbacks waiting on it, behind other executors' work)")
    p.add_argument("--segments", default=_D.segments, choices=["sync", "async"],
                   help="how a PAAM callback waits for its GPU and TPU requests: sync "
                        "(default; it holds its executor, as in the paper's evaluation) or "
                        "async (it awaits them, the paper's asynchronous request; the executor "
                        "runs callbacks of that callback's priority or above meanwhile). "
                        "PiCAS and ROS 2 invoke directly, on the callback's thread: always sync")
    common.add_server_arguments(p)
    common.add_keep_awake_argument(p)
    common.add_gc_argument(p)
    common.add_executor_wait_argument(p)
    p.add_argument("--mt-executor", default=_D.mt_executor, choices=["partitioned", "shared"],
                   help="MT for PiCAS and PAAM: four PicasExecutors in one process, each over "
                        "the 4ST executor's nodes on its core (partitioned, the default), or "
                        "the paper's one multi-threaded executor, a MultiThreadedPicasExecutor "
                        "whose four threads (one per core, all at E0's priority) share every "
                        "callback (shared). ROS 2's MT is rclpy's MultiThreadedExecutor either "
                        "way")
    p.add_argument("--hot-lanes", type=int, default=_D.hot_lanes, metavar="N",
                   help="PAAM: kernels the GPU paamd's most urgent bucket (the hot path's) runs "
                        "at once, each on its own stream at that bucket's priority (paamd "
                        "--lanes N). Default 1, the paper's rule: the hot path's two lidar and "
                        "two transformer branches, side by side in MT, then wait for each "
                        "other's segments")
    p.add_argument("--mt-hot-threads", type=int, default=_D.mt_hot_threads, metavar="K",
                   help="with --mt-executor shared: the first K threads (E0's core first) run "
                        "only the hot path's callbacks (a priority floor per thread), the "
                        f"others any callback; 0 to {len(graph.EXECUTORS) - 1} (default 0: "
                        "every thread runs any callback)")
    p.add_argument("--intersection-groups", default=_D.intersection_groups,
                   choices=["node", "connection"],
                   help="the intersection node's (EuclideanClusterDetector's) two connections: "
                        "in the node's one mutually exclusive callback group (node, default: "
                        "the reference system's), or each in its own (connection: where several "
                        "threads run the node, MT, its hot-path connection no longer waits for "
                        "the cluster-settings one; always so with --segments async)")
    p.add_argument("--e0-executor", default=_D.e0_executor, choices=["rclpy", "cpp"],
                   help="4ST: the hot path's executor E0 as an rclpy process (rclpy, default) "
                        "or as paam_cs2_executor (cpp: the same nodes and callbacks in C++ on "
                        "rcl, ros2/picas_rcl, built by `make ros`; synchronous segments only), "
                        "for every method: PiCAS's executor for PiCAS and PAAM, rclcpp's "
                        "SingleThreadedExecutor order for ROS 2. E1-E3 and MT stay rclpy")
    p.add_argument("--switch-interval-ms", type=float, default=_D.switch_interval_ms,
                   metavar="MS",
                   help="Python's switch interval in the executor processes "
                        "(sys.setswitchinterval): how long a thread holding the GIL keeps it "
                        "from a thread that asks for it; above 0 (default: Python's, 5 ms). "
                        "Where a pool of threads shares one process (MT), a hot-path callback "
                        "may wait this long for a lower one's Python work")
    p.add_argument("--dds-cpus", default=_D.dds_cpus, choices=["executor", "spare"],
                   help="where each executor process's other threads run (Fast DDS's receive "
                        "and event threads): on the process's executor cores (default, as "
                        "taskset on the whole process; they then take their turns on the "
                        "executors' cores) or on the cores no executor or stand-in uses (spare: "
                        "paamd's; the executor cores where there are none). The executor "
                        "threads are pinned to their cores either way")
    p.add_argument("--cpu-probe", action="store_true",
                   help="run a fixed piece of work (C and Python, about 20 µs) on E0's thread "
                        "before each of its callbacks and record how long it took: whether "
                        "E0's CPU ran slower in the slow instances (off by default: it adds "
                        "its time to E0's outside callbacks)")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke scale: --scale 0.2, 3 s per method, 4ST unless --setups "
                        "says otherwise")
    p.add_argument("--replot", action="store_true",
                   help="only redraw the figures from the CSV files of earlier runs (--inputs) "
                        "into --out")
    p.add_argument("--inputs", default=_D.inputs,
                   help="--replot: comma-separated result folders to draw together, e.g. the "
                        "4ST and MT runs of a machine with a per-command time limit; a "
                        "setup x method in several: the last wins (default: --out)")
    p.add_argument("--out", default=_D.out)


def config_from_args(args: argparse.Namespace) -> Config:
    """The run's settings from the parsed command line; the namespace's other values (the
    enclosing parsers' command and experiment) kept for the summary's params."""
    fields = {f.name for f in dataclasses.fields(Config)} - {"invocation"}
    values = {k: v for k, v in vars(args).items() if k != "func"}
    return Config(**{k: v for k, v in values.items() if k in fields},
                  invocation={k: v for k, v in values.items() if k not in fields})


def run(args: argparse.Namespace) -> int:
    from paam_experiments.case_study2 import study
    return study.run(config_from_args(args))
