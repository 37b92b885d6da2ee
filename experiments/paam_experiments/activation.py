"""``paam eval activation``: how late periodic executor callbacks start (the cyclictest study of
YASMIN), with the stock rclpy executor and with the priority-driven one.

One executor process, pinned to one core, runs ``--timers`` measured timers (period
``--period-ms``, a steady clock) and, as in any real node, lower-priority work: ``--load``
timers of non-harmonic periods (7.3, 9.1, 11.7, 13.9 ms, ...) that each burn ``--load-ms`` of
CPU time (about 60% of the core by default). Each measured callback records its activation
latency, the time from its timer's expiry to the callback's start (cyclictest's figure:
``period − time_until_next_call()`` at the callback's first line); expiries the timer skipped
because the previous call came too late are counted as missed.

Executors (``--executors``):

* ``ros2``: rclpy's ``SingleThreadedExecutor``, SCHED_OTHER (stock ROS 2 has no priority knob);
* ``picas-nort``: ``paam.ros.PicasExecutor`` with callback priorities (measured timers above the
  load), SCHED_OTHER: the executor's choice alone;
* ``picas``: the same with the executor thread at SCHED_FIFO 80 (``spin_rt``'s knob); where the
  OS denies SCHED_FIFO, nice −10 instead (the fallback; see ``--rt``).

Load scenarios (``--scenarios``): ``none``; ``other`` (a stressor on every other core, the YASMIN
setup); ``all`` (on every core including the executor's). Writes ``latency.csv`` (every sample),
``summary.csv``, ``summary.json``, ``histograms.png`` and ``maxima.png``.
"""
from __future__ import annotations

import argparse
import dataclasses
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from paam.figures import pyplot, save
from paam_experiments.common.cpus import apply_priority, pin_this_thread
from paam_experiments.common.machine import machine_line, machine_meta
from paam_experiments.common.methods import COLORS
from paam_experiments.common.procs import child_failed, join_child, stress, stress_tool
from paam_experiments.common.report import fmt, out_dir, table, write_csv, write_json
from paam_experiments.common.stats import summarize

EXECUTORS = ("ros2", "picas-nort", "picas")
SCENARIOS = ("none", "other", "all")
LABELS = {"ros2": "ROS 2 SingleThreadedExecutor", "picas-nort": "PicasExecutor (no OS priority)",
          "picas": "PicasExecutor + OS priority"}
LOAD_PERIODS_MS = (7.3, 9.1, 11.7, 13.9, 17.3, 19.9, 23.1, 29.3)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--duration", type=float, default=60.0,
                   help="seconds per executor and scenario (default 60: 6000 activations per "
                        "timer at 10 ms)")
    p.add_argument("--timers", type=int, default=4, help="measured timers (default 4)")
    p.add_argument("--period-ms", type=float, default=10.0, help="their period (default 10)")
    p.add_argument("--load", type=int, default=4,
                   help="lower-priority load timers in the same executor (default 4, at most 8)")
    p.add_argument("--load-ms", type=float, default=1.5,
                   help="CPU time each load callback burns (default 1.5)")
    p.add_argument("--executors", default=",".join(EXECUTORS),
                   help="subset of " + ", ".join(EXECUTORS))
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help="subset of " + ", ".join(SCENARIOS))
    p.add_argument("--cpu", type=int, default=0, help="the executor's core (default 0)")
    p.add_argument("--stress-per-cpu", type=int, default=2, help="stressor processes per core")
    p.add_argument("--rt", default="auto", choices=["auto", "fifo", "nice"],
                   help="OS priority of the 'picas' executor: SCHED_FIFO when permitted else "
                        "nice (auto, default), SCHED_FIFO only, or nice only (what a machine "
                        "that denies SCHED_FIFO gets)")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke scale: 2 s runs of ros2 and picas, scenarios none and all")
    p.add_argument("--out", default="results/eval/activation")


# -- the executor process -----------------------------------------------------------------------


@dataclasses.dataclass
class ActivationRun:
    """One executor process's run: the executor kind (one of EXECUTORS) under a load scenario,
    its measured timers and load timers, its core and OS priority mode, and the run's length."""

    executor: str
    scenario: str
    timers: int
    period_ms: float
    load: int
    load_ms: float
    cpu: int
    rt: str
    duration_s: float
    warmup_s: float


def _burn(ns: int) -> None:
    end = time.thread_time_ns() + ns
    while time.thread_time_ns() < end:
        pass


def executor_main(cfg: ActivationRun, path: str) -> None:
    import warnings
    # Handlers still queued when the executor shuts down are dropped unawaited; harmless here.
    warnings.filterwarnings("ignore", message="coroutine .* was never awaited")
    try:
        _executor(cfg, path)
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        child_failed(path, exc)


def _executor(cfg: ActivationRun, path: str) -> None:
    import rclpy
    from rclpy.clock import Clock, ClockType
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from paam.ros import create_lean_node

    kind = cfg.executor
    ctx = Context()
    rclpy.init(context=ctx)
    node = create_lean_node(f"paam_eval_activation_{os.getpid()}", context=ctx)
    steady = Clock(clock_type=ClockType.STEADY_TIME)
    period_ns = int(cfg.period_ms * 1e6)
    samples: list[list[int]] = [[] for _ in range(cfg.timers)]  # (latency ns)
    first_expiry: list[int | None] = [None] * cfg.timers
    calls = [0] * cfg.timers
    record_from = [0]
    load_ns = int(cfg.load_ms * 1e6)

    def burn_cb() -> None:
        _burn(load_ns)

    # The load is created first: creation order is the stock executor's order among timers
    # that are ready together, and nothing in ROS 2 orders them by importance.
    load = [node.create_timer(p / 1e3, burn_cb, clock=steady)
            for p in LOAD_PERIODS_MS[:cfg.load]]
    timers: list = []

    def measured(i: int):
        def cb() -> None:
            until = timers[i].time_until_next_call()
            now = time.monotonic_ns()
            if until is None or now < record_from[0]:
                return
            lat = period_ns - until
            samples[i].append(lat)
            expiry = now - lat
            if first_expiry[i] is None:
                first_expiry[i] = expiry
            calls[i] += 1
        return cb

    timers.extend(node.create_timer(cfg.period_ms / 1e3, measured(i), clock=steady)
                  for i in range(cfg.timers))

    pin_this_thread([cfg.cpu])
    rt_note = "SCHED_OTHER nice 0"
    if kind == "ros2":
        ex = SingleThreadedExecutor(context=ctx)
    else:
        from paam.ros import PicasExecutor
        ex = PicasExecutor(context=ctx)
        for j, t in enumerate(load):
            ex.set_callback_priority(t, 1 + j)
        for i, t in enumerate(timers):
            ex.set_callback_priority(t, 100 - i)
        if kind == "picas":
            if cfg.rt in ("auto", "fifo"):
                ex.set_executor_priority_cpu(80, cfg.cpu)
                # auto: SCHED_FIFO, else the nice ladder (paam.ros.rt); fifo: SCHED_FIFO or nothing
                report = ex.apply_rt(mode=cfg.rt)
                rt_note = str(report)
            else:
                rt_note = apply_priority(80, "nice")
    ex.add_node(node)
    start = time.monotonic_ns()
    record_from[0] = start + int(cfg.warmup_s * 1e9)
    end = start + int((cfg.warmup_s + cfg.duration_s) * 1e9)
    while time.monotonic_ns() < end:
        ex.spin_once(timeout_sec=0.05)
    stop = time.monotonic_ns()
    missed = []
    for i in range(cfg.timers):
        if first_expiry[i] is None:
            missed.append(0)
            continue
        expected = (stop - first_expiry[i]) // period_ns + 1
        missed.append(max(0, int(expected - calls[i])))
    np.savez(path, **{f"t{i}": np.asarray(s, dtype=np.int64) for i, s in enumerate(samples)},
             missed=np.asarray(missed), rt_note=np.asarray(rt_note))
    ex.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=ctx)


def run_one(cfg: ActivationRun, tmp: str) -> dict:
    path = os.path.join(tmp, f"{cfg.executor}-{cfg.scenario}.npz")
    proc = mp.get_context("spawn").Process(target=executor_main, args=(cfg, path))
    proc.start()
    join_child(proc, path, f"{cfg.executor}/{cfg.scenario}: executor",
               cfg.warmup_s + cfg.duration_s + 120)
    with np.load(path) as z:
        lat = [z[f"t{i}"] / 1e3 for i in range(cfg.timers)]
        return {"latency_us": lat, "missed": [int(x) for x in z["missed"]],
                "rt": str(z["rt_note"])}


# -- driver -------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from paam.ros import ROS_MISSING_HINT, ros_available
    if not ros_available():
        print(f"paam eval activation: {ROS_MISSING_HINT}")
        return 2
    os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if args.quick:
        args.duration = min(args.duration, 2.0)
        args.executors = "ros2,picas"
        args.scenarios = "none,all"
    executors = _subset(args.executors, EXECUTORS)
    scenarios = _subset(args.scenarios, SCENARIOS)
    ncpu = os.cpu_count() or 1
    if not 0 <= args.cpu < ncpu:
        raise SystemExit(f"--cpu {args.cpu}: this machine has CPUs 0..{ncpu - 1}")
    if not 0 <= args.load <= len(LOAD_PERIODS_MS):
        raise SystemExit(f"--load must be 0..{len(LOAD_PERIODS_MS)}")
    others = [c for c in range(ncpu) if c != args.cpu]
    out = out_dir(args.out)
    meta = machine_meta("cpu")
    load_util = sum(args.load_ms / p for p in LOAD_PERIODS_MS[:args.load])
    warmup_s = 0.5
    print(f"paam eval activation: {args.timers} timers every {args.period_ms} ms on CPU "
          f"{args.cpu}, {args.load} load timers ({load_util:.0%} of the core), "
          f"{args.duration:.0f} s per run\n"
          f"  {machine_line(meta)}; stress: {stress_tool()}", flush=True)
    results: dict[str, dict[str, dict]] = {}
    n = len(executors) * len(scenarios)
    k = 0
    with tempfile.TemporaryDirectory(prefix="paam-eval-") as tmp:
        for scenario in scenarios:
            cpus = {"none": [], "other": others, "all": list(range(ncpu))}[scenario]
            if scenario == "other" and not others:
                print("  scenario 'other' skipped: a single CPU", flush=True)
                continue
            with stress(cpus, per_cpu=args.stress_per_cpu):
                for ex in executors:
                    k += 1
                    print(f"[{k}/{n}] {ex}, stress on {scenario} ...", flush=True)
                    cfg = ActivationRun(
                        executor=ex, scenario=scenario, timers=args.timers,
                        period_ms=args.period_ms, load=args.load, load_ms=args.load_ms,
                        cpu=args.cpu, rt=args.rt, duration_s=args.duration, warmup_s=warmup_s)
                    results.setdefault(scenario, {})[ex] = run_one(cfg, tmp)

    rows, raw_rows = [], []
    summary: dict = {}
    for scenario, per in results.items():
        for ex, r in per.items():
            allv = np.concatenate(r["latency_us"])
            s = summarize(allv)
            s["missed"] = sum(r["missed"])
            s["rt"] = r["rt"]
            summary.setdefault(scenario, {})[ex] = s
            rows.append({"scenario": scenario, "executor": ex, "n": s["n"], "min_us": s["min"],
                         "avg_us": s["mean"], "p99_us": s["p99"], "max_us": s["max"],
                         "missed": s["missed"], "os_priority": r["rt"]})
            for i, v in enumerate(r["latency_us"]):
                raw_rows.extend({"scenario": scenario, "executor": ex, "timer": i,
                                 "latency_us": float(x)} for x in v)
    write_csv(out / "summary.csv", rows)
    write_csv(out / "latency.csv", raw_rows)
    params = {k: v for k, v in vars(args).items() if k != "func"}
    write_json(out / "summary.json", {"meta": meta, "params": params,
                                      "load_utilization": load_util, "results": summary})
    text = render(summary, meta, args, load_util)
    (out / "summary.txt").write_text(text)
    print("\n" + text)
    try:
        plot(results, out, args)
        print(f"wrote {out}/summary.csv, latency.csv, summary.json, summary.txt, histograms.png, "
              "maxima.png")
    except Exception as exc:  # noqa: BLE001
        print(f"wrote {out}/summary.*, latency.csv (no plots: {exc})")
    return 0


def _subset(text: str, allowed: tuple[str, ...]) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise SystemExit(f"unknown {bad or 'empty list'}; choose from {', '.join(allowed)}")
    return items


def render(summary: dict, meta: dict, args, load_util: float) -> str:
    lines = [f"Activation latency (µs, cyclictest min/avg/max): {args.timers} timers at "
             f"{args.period_ms} ms, {args.load} load timers ({load_util:.0%}), "
             f"{args.duration:.0f} s per run", machine_line(meta), ""]
    rows = [["stress on", "executor", "samples", "min", "avg", "p99", "max", "missed",
             "OS priority"]]
    for scenario, per in summary.items():
        for ex, s in per.items():
            rows.append([scenario, ex, str(s["n"]), fmt(s["min"]), fmt(s["mean"]),
                         fmt(s["p99"]), fmt(s["max"]), str(s["missed"]), s["rt"]])
    return "\n".join(lines) + table(rows, right=range(2, 8)) + "\n"


def plot(results: dict, out: Path, args) -> None:
    plt = pyplot()
    colors = {"ros2": COLORS["ROS 2"], "picas-nort": "#b3a2d6",
              "picas": COLORS["PiCAS"]}
    n = len(results)
    fig, axes = plt.subplots(1, n, figsize=(4.3 * n, 3.6), squeeze=False, sharey=True)
    allv = np.concatenate([np.concatenate(r["latency_us"]) for per in results.values()
                           for r in per.values()])
    bins = np.logspace(np.log10(max(1.0, allv.min())), np.log10(allv.max() * 1.05), 60)
    for ax, (scenario, per) in zip(axes[0], results.items()):
        for ex, r in per.items():
            ax.hist(np.concatenate(r["latency_us"]), bins=bins, histtype="step", lw=1.4,
                    color=colors[ex], label=LABELS[ex])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"stress on: {scenario}", fontsize=9)
        ax.set_xlabel("activation latency (µs)")
    axes[0][0].set_ylabel("activations")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Activation latency of {args.period_ms:g} ms timers beside "
                 f"{args.load} load callbacks of {args.load_ms:g} ms", fontsize=10)
    save(fig, out / "histograms.png")

    fig, ax = plt.subplots(figsize=(7, 3.6))
    scen = list(results)
    exs = [e for e in EXECUTORS if any(e in results[s] for s in scen)]
    width = 0.8 / len(exs)
    for j, ex in enumerate(exs):
        x = np.arange(len(scen)) + (j - (len(exs) - 1) / 2) * width
        mx = [np.concatenate(results[s][ex]["latency_us"]).max() / 1e3 if ex in results[s] else 0
              for s in scen]
        p99 = [np.percentile(np.concatenate(results[s][ex]["latency_us"]), 99) / 1e3
               if ex in results[s] else 0 for s in scen]
        ax.bar(x, mx, width, color=colors[ex], label=f"{LABELS[ex]} (max)")
        ax.scatter(x, p99, color="k", marker="_", s=200, zorder=3,
                   label="p99" if j == 0 else None)
    ax.set_xticks(np.arange(len(scen)), [f"stress on {s}" for s in scen])
    ax.set_ylabel("activation latency (ms)")
    ax.legend(fontsize=7)
    ax.set_title("Worst and 99th-percentile activation latency", fontsize=10)
    save(fig, out / "maxima.png")
