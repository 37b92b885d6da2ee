"""``paam eval case-study-2``: the PAAM paper's case study 2 (Sec. V-B, Fig. 11), the Autoware
reference system (ros-realtime/reference-system, ``autoware_reference_system``) rebuilt in rclpy.

The graph is the reference system's 24 nodes with its node types and wiring: six sensors
(timers: front/rear lidar 100 ms, PointCloudMap 120, Visualizer 60, Lanelet2Map 100,
EuclideanClusterSettings 25), nine transforms, five fusions (publish once both inputs have
arrived, then clear), the cyclic BehaviorPlanner (a 100 ms timer fusing the latest of its six
inputs), the intersection node EuclideanClusterDetector (two input -> output connections) and
two command sinks. Every topic is KEEP_LAST(1). Each callback burns the reference system's
run time for it (``run_ms`` in ``SYSTEM``: the number cruncher's time, burned as thread CPU time
by a direct-mode ``spin`` kernel, so it releases the GIL) and then runs a GPU segment (the ``spin``
kernel, ``--gpu-ms``), except the BehaviorPlanner's seven callbacks (as in the paper). The rear
points transformer also runs a segment on a second accelerator, ``--tpu-ms``: the Coral TPU's
stand-in, a CPU-backend device with one non-preemptive context on its own core.

Messages (``std_msgs/Int64MultiArray``) carry the reference system's sample history: for every
node the sample went through, its publish time, sequence number and the input samples it found
missing (sequence-number gaps, the reference system's "dropped samples"). KPIs as the
reference system computes them:

* hot-path latency: end of ObjectCollisionEstimator's callback - the later of the two lidar
  stamps in its sample (hot path: Front/Rear lidar -> PointsTransformerFront/Rear ->
  PointCloudFusion -> RayGroundFilter -> EuclideanClusterDetector -> ObjectCollisionEstimator);
* hot-path drops: per hot-path instance (sample reaching the estimator), the missing samples
  the hot-path nodes recorded;
* behavior-planner period: time between the starts of consecutive BehaviorPlanner timer
  callbacks (set to 100 ms).

Executor setups: ``4ST`` (four executors, one process each, each pinned to its own core; the
whole hot path on executor E0) and ``MT`` (one process over four cores). Methods:

* ``ROS 2``: rclpy's SingleThreadedExecutor (4ST) or MultiThreadedExecutor with 4 threads
  (MT), SCHED_OTHER; direct invocation of both accelerators;
* ``PiCAS``: ``paam.ros.PicasExecutor`` with hot-path callbacks highest, the executors' OS
  priorities (SCHED_FIFO when permitted, else a nice ladder); direct invocation;
* ``PAAM``: the same executors, GPU segments through paamd (one bucket per chain priority) and
  TPU segments through a second paamd with one bucket (one non-preemptive context).

Every method's nodes and topics are lean (``paam.ros.create_lean_node``, no services and no QoS
event handlers): rclpy's executors walk every entity in Python at each wait (paam.ros.lean).

MT for PiCAS and PAAM (``--mt-executor``): ``partitioned`` (the default) runs one process with
four threads, each spinning its own PicasExecutor over one quarter of the nodes (the 4ST
partition) pinned to its core; ``shared`` runs the paper's one multi-threaded executor,
``paam.ros.MultiThreadedPicasExecutor`` with four threads pinned one per core, every thread free
to run any callback (the highest-priority ready one; with ``--mt-hot-threads K`` the first K of
them, E0's core first, run only the hot path's callbacks, a priority floor, so that a hot
callback finds a thread not held by lower work). ROS 2's MT is rclpy's MultiThreadedExecutor
over all nodes. All are one process, so their Python work shares one GIL (rclpy's, not the
reference system's C++). The summary says which executor each run used. Where one pool of
threads runs every callback (shared, ROS 2's MT) each callback is on record with its thread, and
each hot-path instance's time is split by what the threads did (``case_study2.threads``). There
the intersection node's two connections, in the node's one mutually exclusive callback group as
in the reference system, hold each other out: ``--intersection-groups connection`` gives each
its own group.

On the CPU backend one core plays the GPU (the last one) and the TPU gets a core of its own when
one is left; the four executor cores (2-5 of the paper's machine) are mapped modulo onto the
cores beside the device core: all onto core 0 on a 2-core machine (then the TPU shares the GPU's
core). ``--scale`` multiplies the run times and segments, not the periods (the KPIs are relative
to the reference system's periods). ``--wait`` sets how PAAM's callbacks wait for paamd (suspend
on a futex by default; direct CUDA invocation spins on a completion flag), ``--server-poll-us``
paamd's busy-poll window, ``--server-pin`` whether paamd's threads are pinned one per core,
``--dispatcher-priority`` its dispatcher's SCHED_FIFO priority (default: one above E0's),
``--request-priority`` what paamd ranks a GPU request by (its chain's priority, the paper's rule
and the default, or its executor's most critical chain priority), ``--hot-lanes N`` that the GPU
paamd's most urgent bucket (the hot path's) runs N kernels at once (paamd's ``--lanes``; default
1, the paper's one kernel at a time per bucket), ``--segments async`` that PAAM's callbacks
await their requests (the paper's asynchronous request: the executor runs work of the awaiting
callback's priority or above meanwhile; default sync, the callback holding its executor). Counts
every subscription's missing samples (``drops_by_subscription``) and times PAAM's GPU requests
per chain priority, and how late the later lidar's callback started after its timer was due (the
KPI starts at that callback's start, as the reference system's does; ``hot_path_from_due_ms``
adds the lateness). Writes ``hot_path.csv``, ``bp_period.csv``, ``paam_stages.csv`` (paamd's
stages of every recorded PAAM GPU request, with its submit time and chain priority),
``host_stat.csv`` (/proc/stat each second: what the host, a hypervisor, took from each CPU),
``summary.csv``, ``summary.json``, ``summary.txt``, ``fig11a_hot_path_latency.png``,
``fig11b_bp_period.png``, ``fig11c_drops.png`` and ``fig11d_host_steal.png`` (hot-path latency
over time beside the steal).

The package, by concern: ``graph`` (the reference system's spec), ``config`` (the run's and an
executor process's settings), ``placement`` (cores), ``callbacks`` and ``nodes`` (the rclpy
nodes of one process), ``executor`` (one executor process), ``cpp`` (the C++ E0), ``runner``
(the processes and paamds of a run), ``records`` (what the processes record), ``kpis``, ``e0``
and ``threads`` (the KPIs and where the time went), ``bounds`` (the analysis' bound),
``outputs`` and ``report`` (the files and summary.txt), ``plots``, ``study`` (the whole run)
and ``cli`` (the options).
"""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from paam_experiments.case_study2.cli import add_arguments as add
    add(p)


def run(args: argparse.Namespace) -> int:
    from paam_experiments.case_study2.cli import run as run_cli
    return run_cli(args)
