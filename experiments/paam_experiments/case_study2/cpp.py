"""Case study 2's hot-path executor E0 in C++ (``paam eval case-study-2 --e0-executor cpp``).

4ST's E0 runs the whole hot path on one thread, and in rclpy most of its own time outside the
callbacks is Python's (the executor's wait and pick, rclpy's take and publish;
docs/evaluation.md, "E0's own CPU time outside callbacks"). This runs E0 as the paper's
executors run, compiled: ``paam_cs2_executor`` (ros2/picas_rcl), PiCAS's priority-driven
executor on rcl's C API with the same nodes and callbacks in C++, for PiCAS and PAAM; for ROS 2
the same program picks as rclcpp's SingleThreadedExecutor does (the paper's stock executor), so
all three methods run E0 compiled. The other three executors stay rclpy processes; the
messages, topics, priorities and records are the same, so a run's records mix with theirs.

:mod:`.graph` stays the one description of the reference system: this module writes the
program's spec from it (:func:`spec_text`), starts the program in E0's process (:func:`run`),
gives its threads the OS priorities and cores the rclpy process's would get, and turns what it
recorded into the record the rclpy executor process writes (:class:`.records.ProcessRecord`).
"""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import numpy as np

from paam_experiments import common
from paam_experiments.case_study2 import graph, records, threads
from paam_experiments.case_study2.config import ProcessConfig

PROGRAM = "paam_cs2_executor"
_READY_TIMEOUT_S = 180.0


def program() -> str:
    """The program's path: ``$PAAM_CS2_EXECUTOR``, else the venv's ``bin`` (``make ros``
    installs it there), else ``PATH``. Raises FileNotFoundError saying how to build it."""
    env = os.environ.get("PAAM_CS2_EXECUTOR")
    if env:
        if not os.access(env, os.X_OK):
            raise FileNotFoundError(f"$PAAM_CS2_EXECUTOR={env} is not an executable file")
        return env
    here = Path(sys.prefix) / "bin" / PROGRAM
    if os.access(here, os.X_OK):
        return str(here)
    found = shutil.which(PROGRAM)
    if found:
        return found
    raise FileNotFoundError(
        f"{PROGRAM} not found in {here.parent} or on PATH: build it with `make ros` "
        "(ros2/build_msgs.sh VENV builds it into the venv), or name it in $PAAM_CS2_EXECUTOR")


def library_path() -> str:
    """LD_LIBRARY_PATH for the program: the ROS wheels keep their libraries in the prefix's
    ``lib`` and in ``site-packages/ros_*.libs`` (as ros2/build_msgs.sh finds them)."""
    site = Path(sysconfig.get_paths()["purelib"])
    dirs = [str(Path(sys.prefix) / "lib")] + sorted(str(d) for d in site.glob("ros_*.libs"))
    old = os.environ.get("LD_LIBRARY_PATH")
    return ":".join(dirs + ([old] if old else []))


def spec_text(cfg: ProcessConfig, out_path: str) -> str:
    """The program's spec (its format: ros2/picas_rcl/cs2_executor.cc, ReadSpec) for the
    nodes of ``cfg.executors["E0"]``, from :mod:`.graph`'s description of the system."""
    ids = graph.NODE_IDS
    lines = [f"prefix {cfg.topic_prefix}", f"method {cfg.method}",
             f"backend {cfg.backend}", f"wait {cfg.wait}",
             f"hot_wait {cfg.hot_path_wait}", f"hot_priority {graph.HOT_PRIORITY}",
             f"out {out_path}",
             f"gpu_ms {cfg.gpu_ms!r}", f"tpu_ms {cfg.tpu_ms!r}", f"scale {cfg.scale!r}",
             f"warmup_s {cfg.warmup_s!r}", f"duration_s {cfg.duration_s!r}",
             f"device_cpu {cfg.device_cpu}",
             f"tpu_cpu {cfg.tpu_cpu if cfg.tpu_cpu is not None else -1}",
             f"tpu_priority {graph.CHAIN_PRIORITY[graph.TPU_NODE]}",
             # (as the rclpy process: a direct kernel on the CPU runs on the callback's thread)
             f"drop_gpu {int(cfg.drops_gpu_priority())}",
             f"drop_tpu {int(cfg.drops_tpu_priority())}",
             f"gpu_socket {cfg.gpu_socket or '-'}", f"tpu_socket {cfg.tpu_socket or '-'}",
             "stages " + " ".join(records.STAGES),
             "hot_ids " + " ".join(str(i) for i in sorted(graph.HOT_IDS)),
             "hot_hops " + " ".join(str(ids[n]) for n in graph.HOT_HOPS),
             f"lidars {ids['FrontLidarDriver']} {ids['RearLidarDriver']}",
             f"estimator {ids['ObjectCollisionEstimator']}"]
    for name in cfg.executors["E0"]:
        spec = graph.BY_NAME[name]
        if spec.kind not in ("sensor", "transform", "fusion", "intersection"):
            raise ValueError(f"{name}: a {spec.kind} node is not run by {PROGRAM}")
        gpu = name not in graph.NO_ACCELERATOR
        lines.append(f"node {ids[name]} {name} {spec.kind} {spec.period_ms!r} {int(gpu)} "
                     f"{int(name == graph.TPU_NODE)}")

        def cb(index: int, topic: str, run_ms: float, cache_ms: float, out: str) -> str:
            chain, picas = graph.callback_priority(name, index)
            req = (graph.request_priority(name, index, cfg.request_priority)
                   if cfg.method == "paam" else chain)
            producer = ids[graph.producer(topic)] if topic != "-" else -1
            return (f"cb {ids[name]} {index} {topic} {producer} {run_ms!r} {cache_ms!r} "
                    f"{chain} {picas} {req} {out}")
        if spec.kind == "sensor":
            lines.append(cb(0, "-", spec.run_ms[0], 0.0, name))
        elif spec.kind == "transform":
            lines.append(cb(0, spec.inputs[0], spec.run_ms[0], 0.0, name))
        elif spec.kind == "fusion":  # (every input at the node's callback 0, as in .nodes)
            lines += [cb(0, t, spec.run_ms[0], spec.run_ms[1], name) for t in spec.inputs]
        else:  # intersection: one connection per input
            lines += [cb(i, t, spec.run_ms[i], 0.0, out)
                      for i, (t, out) in enumerate(zip(spec.inputs, spec.outputs))]
    return "\n".join(lines) + "\n"


def _thread_names(pid: int) -> dict[int, str]:
    out = {}
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return out
    for tid in tids:
        try:
            out[tid] = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
        except OSError:
            pass
    return out


def _prioritize(pid: int, cfg: ProcessConfig) -> str:
    """The program's threads get what E0's rclpy process gives its own (.executor):
    for PiCAS and PAAM E0's OS priority on every thread (SCHED_FIFO but for Fast DDS's sender
    threads, which paam.ros.rt.dds_threads_rt says why to keep at SCHED_OTHER; else the nice
    ladder), for ROS 2 none; and the executor thread (the main one) pinned to E0's core.
    Returns the run's rt note."""
    from paam.ros.rt import DDS_SENDER_PREFIX, apply_rt
    prio, cpu = cfg.priorities["E0"], cfg.cpus["E0"]
    if cfg.method == "ros2":
        os.sched_setaffinity(pid, {cpu})
        return (f"E0: SCHED_OTHER nice 0, CPU {cpu} (C++ executor, {PROGRAM}, rclcpp's "
                "SingleThreadedExecutor order)")
    # what this machine permits, tried on this (the parent's) thread, then undone here
    report = apply_rt(prio, None, mode=cfg.rt, log=lambda _line: None)
    for tid, name in _thread_names(pid).items():
        try:
            if report.policy == "SCHED_FIFO" and not name.startswith(DDS_SENDER_PREFIX):
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(prio))
            elif report.policy == "nice":
                os.setpriority(os.PRIO_PROCESS, tid, report.nice)
        except OSError:
            pass  # (a thread that ended meanwhile)
    os.sched_setaffinity(pid, {cpu})  # (on Linux, the pid is the main thread's id)
    try:
        if report.policy == "SCHED_FIFO":
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        elif report.policy == "nice":
            os.setpriority(os.PRIO_PROCESS, 0, 0)
    except OSError:
        pass
    return f"E0: {report.priority_summary}, CPU {cpu} (C++ executor, {PROGRAM})"


def _thread_cpus(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for tid in _thread_names(pid):
        try:
            key = common.cpu_ranges(os.sched_getaffinity(tid))
        except OSError:
            continue
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def _tail(path: str, limit: int = 4000) -> str:
    """The end of the program's stderr file (at most ``limit`` characters)."""
    try:
        return Path(path).read_text(errors="replace")[-limit:].strip()
    except OSError:
        return ""


def _read_line(proc: subprocess.Popen, timeout_s: float, what: str, err_path: str) -> str:
    """The program's next line on stdout, or RuntimeError (with its stderr) if it ended or took
    longer than ``timeout_s``."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    if not ready:
        proc.kill()
        raise RuntimeError(f"{PROGRAM}: no {what} after {timeout_s:.0f} s: {_tail(err_path)}")
    line = proc.stdout.readline()
    if not line:  # its stdout closed: it is ending (its status may take a moment to come)
        try:
            status = proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            status = f"{proc.wait()} (killed: stdout closed, still running)"
        raise RuntimeError(f"{PROGRAM} exited with status {status} before {what}: "
                           f"{_tail(err_path)}")
    return line.strip()


def run(cfg: ProcessConfig, path: str, sync: dict) -> None:
    """E0's process with the C++ executor: as .executor.run_executor for E0 alone, its record
    written to ``path`` in the same layout."""
    exe = program()
    common.pin_this_thread(cfg.helper_cpus or sorted(set(cfg.cpus.values())))
    # stderr into a file, not a pipe: Fast DDS's warnings over a long run could fill a pipe
    # nobody reads during the spin and block the executor thread that writes them
    spec_path, out_path, err_path = path + ".spec", path + ".json", path + ".stderr"
    Path(spec_path).write_text(spec_text(cfg, out_path))
    env = dict(os.environ, LD_LIBRARY_PATH=library_path())
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([exe, spec_path], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    try:
        if _read_line(proc, _READY_TIMEOUT_S, "ready line", err_path) != "ready":
            raise RuntimeError(f"{PROGRAM}: unexpected first line")
        rt_note = _prioritize(proc.pid, cfg)
        sync["ready"].put(cfg.name)
        if not sync["go"].wait(180):
            raise RuntimeError("no start signal from the parent")
        start_ns = int(sync["start_at"].value * 1e9)
        proc.stdin.write(f"start {start_ns}\n")
        proc.stdin.flush()
        total = cfg.warmup_s + cfg.duration_s
        thread_cpus: dict[str, int] = {}
        snap = threading.Timer(max(0.0, start_ns / 1e9 + total / 2 - time.monotonic()),
                               lambda: thread_cpus.update(_thread_cpus(proc.pid)))
        snap.daemon = True
        snap.start()
        left = start_ns / 1e9 + total - time.monotonic()
        if _read_line(proc, max(0.0, left) + 60, "end of the run", err_path) != "done":
            raise RuntimeError(f"{PROGRAM}: unexpected last line")
        snap.cancel()
        if proc.wait(30) != 0:
            raise RuntimeError(f"{PROGRAM} exited with status {proc.returncode}: "
                               f"{_tail(err_path)}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rec = json.loads(Path(out_path).read_text())

    def rows(key: str, width: int) -> np.ndarray:
        return np.asarray(rec[key], dtype=np.int64).reshape(-1, width)
    records.ProcessRecord(
        hot=rows("hot", records.HOT_COLS), bp_starts=np.zeros(0, dtype=np.int64),
        published=np.asarray(rec["published"], dtype=np.int64),
        excess=np.asarray(rec["excess"], dtype=np.float64),
        sub_drops={k: int(v) for k, v in rec["sub_drops"].items()},
        gpu_wall=np.asarray(rec["gpu_wall"], dtype=np.float64),
        gpu_stages=rows("gpu_stages", 1 + len(records.STAGES)), rt=[rt_note],
        thread_cpus=thread_cpus, gc_ns=np.zeros((0, 3), dtype=np.int64),
        hot_calls=rows("calls", records.CALL_COLS), switch_interval=sys.getswitchinterval(),
        mt_calls=np.zeros((0, threads.CALL_COLS), dtype=np.int64)).save(path)
    for p in (spec_path, out_path, err_path):
        os.unlink(p)
