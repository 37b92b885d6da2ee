"""What the experiments share, one submodule per concern:

* :mod:`~paam_experiments.common.report`: result folders, CSV/JSON files, plain-text tables;
* :mod:`~paam_experiments.common.stats`: percentiles, jitter, correlation;
* :mod:`~paam_experiments.common.machine`: the machine a run happens on;
* :mod:`~paam_experiments.common.cpus`: CPU placement, pinning, a thread's OS priority;
* :mod:`~paam_experiments.common.procs`: worker processes, the CPU stressor, idle-core loops;
* :mod:`~paam_experiments.common.host`: what the host (a hypervisor) took from the CPUs;
* :mod:`~paam_experiments.common.collector`: Python's garbage collector in the executors;
* :mod:`~paam_experiments.common.server`: paamd's options and threads;
* :mod:`~paam_experiments.common.args`: command-line options the experiments share;
* :mod:`~paam_experiments.common.methods`: the case studies' methods, their colors;
* :mod:`~paam_experiments.common.plots`: the latency-beside-steal figure.

Every name is also here, as ``common.<name>``. Nothing here imports rclpy or matplotlib at
import time.
"""
from __future__ import annotations

from paam.argtypes import positive_int
from paam.figures import pyplot, save
from paam.ros.rt import apply_rt, dds_threads_rt, lock_memory, nice_for
from paam_experiments.common.args import (add_executor_wait_argument, add_gc_argument,
                                          add_keep_awake_argument, add_server_arguments)
from paam_experiments.common.collector import (GC_MODES, GcPauses, gc_instances, gc_line,
                                               gc_summary, overlaps)
from paam_experiments.common.cpus import (ThreadSchedStat, apply_priority, cpu_ranges,
                                          device_cpu, host_cpus, map_cpu, pin_this_thread,
                                          thread_cpus, threading_native_id)
from paam_experiments.common.host import (ACTIVE_BUSY_MS_PER_S, QUIET_STEAL_MS, HostSeries,
                                          HostStat, host_panel, host_rows, host_series,
                                          host_summary, parse_proc_stat, proc_stat_deltas,
                                          split_by_steal, steal_around, steal_text)
from paam_experiments.common.machine import (cpu_model, device_core_line, gpu_label,
                                             machine_line, machine_meta, rt_throttling)
from paam_experiments.common.methods import (COLORS, KEY_OF_METHOD, METHOD_KEYS, METHODS,
                                             default_kappa, parse_methods)
from paam_experiments.common.plots import plot_host
from paam_experiments.common.procs import (child_failed, environ, join_child, keep_awake,
                                           stop_processes, stress, stress_tool,
                                           synchronous_start)
from paam_experiments.common.report import (fmt, fmt_p50_p99_max, open_csv, out_dir, table,
                                            write_csv, write_json)
from paam_experiments.common.server import (DIRECT_CUDA_WAIT, PAAMD_CUDA_WAIT, ServerOptions,
                                            awake_cpus, cuda_wait_args, direct_wait_label,
                                            dispatcher_args, paamd_startup, paamd_worker_sched,
                                            paamd_workers, raise_server_threads, server_cores,
                                            server_pin_label, server_poll_args,
                                            server_poll_label, spin_bucket_args)
from paam_experiments.common.stats import correlation, summarize

__all__ = [
    "ACTIVE_BUSY_MS_PER_S", "COLORS", "DIRECT_CUDA_WAIT", "GC_MODES", "KEY_OF_METHOD",
    "METHODS", "METHOD_KEYS", "PAAMD_CUDA_WAIT", "QUIET_STEAL_MS", "GcPauses", "HostSeries",
    "HostStat", "ServerOptions", "ThreadSchedStat", "add_executor_wait_argument",
    "add_gc_argument", "add_keep_awake_argument", "add_server_arguments", "apply_priority",
    "apply_rt", "awake_cpus", "child_failed", "correlation", "cpu_model", "cpu_ranges",
    "cuda_wait_args", "dds_threads_rt", "default_kappa", "device_core_line", "device_cpu",
    "direct_wait_label", "dispatcher_args", "environ", "fmt", "fmt_p50_p99_max", "gc_instances",
    "gc_line", "gc_summary", "gpu_label", "host_cpus", "host_panel", "host_rows", "host_series",
    "host_summary", "join_child", "keep_awake", "lock_memory", "machine_line", "machine_meta",
    "map_cpu", "nice_for", "open_csv", "out_dir", "overlaps", "paamd_startup",
    "paamd_worker_sched", "paamd_workers", "parse_methods", "parse_proc_stat", "pin_this_thread",
    "plot_host", "positive_int", "proc_stat_deltas", "pyplot", "raise_server_threads",
    "rt_throttling", "save", "server_cores", "server_pin_label", "server_poll_args",
    "server_poll_label", "spin_bucket_args", "split_by_steal", "stop_processes", "stress",
    "stress_tool", "summarize", "steal_around", "steal_text", "synchronous_start", "table",
    "thread_cpus", "threading_native_id", "write_csv", "write_json",
]
