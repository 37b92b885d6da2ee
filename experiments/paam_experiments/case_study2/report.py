"""summary.txt: the case study's KPI table and, per block, one line per setup x method of
what explains it (the header names the options that shape the run)."""
from __future__ import annotations

from typing import Any

from paam_experiments import common
from paam_experiments.case_study2 import e0, graph, threads
from paam_experiments.case_study2.bounds import AnalysisBounds, HotPathBound
from paam_experiments.case_study2.config import Config
from paam_experiments.case_study2.graph import Demand
from paam_experiments.case_study2.kpis import LidarSamples, RunSummary
from paam_experiments.case_study2.placement import Placement, cores_line

# setup -> method name -> its summary
Summary = dict[str, dict[str, RunSummary]]


def _thread_cpus_line(by_process: dict) -> str:
    """{"E0": {"2": 1, "0-1,6-14": 9}} -> "E0: 1 on 2, 9 on 0-1,6-14"."""
    return " | ".join(f"{name}: " + ", ".join(f"{n} on {cpus}" for cpus, n in counts.items())
                      for name, counts in by_process.items()) or "not recorded"


def _skipped(lidar: LidarSamples) -> str:
    exp = lidar.expected_each
    return str(max(0, exp - lidar.front) + max(0, exp - lidar.rear))


def _per_run(lines: list[str], summary: Summary, setups: list[str], methods: list[str],
             key: str, title: str, fmt) -> None:
    """A titled block of summary.txt: one line per run holding ``key``, ``fmt``-ed (None: no
    line)."""
    lines.append(title)
    for s in setups:
        for m in methods:
            value = summary[s][m].get(key)
            text = fmt(value) if value is not None else None
            if text is not None:
                lines.append(f"  {s} {m}: {text}")


_REQUEST_PRIORITY_LABEL = {"chain": "the chain's priority",
                           "executor": "the executor's top chain priority"}


def render(summary: Summary, setups: list[str], methods: list[str], meta: dict[str, Any],
           cfg: Config, placement: Placement, dem: Demand) -> str:
    """summary.txt: the KPI table, then per block one line per setup x method."""
    direct_wait = common.direct_wait_label(cfg, methods)
    lines = [f"Case study 2 (Autoware reference system), run times x{cfg.scale:g}, GPU segment "
             f"{cfg.gpu_ms * cfg.scale:g} ms, TPU {cfg.tpu_ms * cfg.scale:g} ms, "
             f"{cfg.duration:g} s per run; PAAM clients wait: {cfg.wait}"
             + (f" (the hot path's: {cfg.hot_wait})"
                if cfg.hot_wait not in (None, cfg.wait) else "")
             + ", GPU requests at "
             f"{_REQUEST_PRIORITY_LABEL[cfg.request_priority]}, paamd poll: "
             f"{common.server_poll_label(cfg)}, threads {common.server_pin_label(cfg)}"
             + (f"; {direct_wait}" if direct_wait else "")
             + ("; PAAM's segments awaited (async)"
                if cfg.segments == "async" else "")
             + ("; cores kept awake (SCHED_IDLE busy loops; not a polling paamd's)"
                if cfg.keep_awake else "")
             + ("; the PicasExecutor waits through rclpy (--executor-wait rclpy)"
                if cfg.executor_wait == "rclpy" else "")
             + ("; MT's PiCAS and PAAM: one MultiThreadedPicasExecutor (--mt-executor shared)"
                if cfg.mt_executor == "shared" else "")
             + (f", its first {cfg.mt_hot_threads} thread(s) for the hot path only "
                "(--mt-hot-threads)" if cfg.mt_hot_threads else "")
             + ("; the intersection node's connections in a callback group each "
                "(--intersection-groups connection)"
                if cfg.intersection_groups == "connection" else "")
             + ("; 4ST's E0 in C++ on rcl (--e0-executor cpp; ROS 2's in rclcpp's order)"
                if cfg.e0_executor == "cpp" else "")
             + (f"; Python's switch interval {cfg.switch_interval_ms:g} ms "
                "(--switch-interval-ms)" if cfg.switch_interval_ms else "")
             + (f"; the hot path's GPU bucket runs {cfg.hot_lanes} kernels at once "
                "(--hot-lanes)" if cfg.hot_lanes > 1 else ""),
             common.machine_line(meta),
             "hot path: later lidar stamp -> ObjectCollisionEstimator end (ms); drops: missing "
             "samples per hot-path instance; BP: behavior-planner period (set 100 ms)", ""]
    head = ["setup", "method", "n", "hot min", "mean", "p99", "max", "drops", "inst w/ drops",
            "lidar skipped", "BP mean", "BP min", "BP max", "BP std"]
    rows = [head]
    for s in setups:
        for m in methods:
            r = summary[s][m]
            h, b, d = r.hot_path_ms, r.bp_period_ms, r.drops
            rows.append([s, m, str(h["n"]), common.fmt(h["min"]), common.fmt(h["mean"]),
                         common.fmt(h["p99"]), common.fmt(h["max"]), str(d.total),
                         str(d.instances_with_drops), _skipped(r.lidar_samples),
                         common.fmt(b["mean"]),
                         common.fmt(b["min"]), common.fmt(b["max"]), common.fmt(b["std"])])
    lines.append(common.table(rows, right=range(2, len(head))))
    lines.append("lidar skipped: lidar timer activations that never ran (front + rear, of "
                 f"{2 * int(cfg.duration * 1e3 // 100)}): rclpy skips a timer's missed periods, "
                 "so a late executor loses hot-path instances without any dropped sample")
    lines.append("")
    lines.append("demand per 4ST executor (CPU ms per s): " + ", ".join(
        f"{k} {v.cpu_ms_per_s:.0f}" for k, v in dem.executors.items())
        + f"; GPU {dem.gpu_ms_per_s:.0f} ms/s; TPU {dem.tpu_ms_per_s:.0f} ms/s")
    lines.append("cores: executors " + cores_line(placement, cfg))
    for s in setups:
        for m in methods:
            lines.append(f"{s} {m} executors: " + " | ".join(summary[s][m].rt))
            lines.append(f"{s} {m} threads per process by the cores they may run on (mid-run): "
                         + _thread_cpus_line(summary[s][m].thread_cpus))
    lines.append("GPU segment on the executor's thread (request call, ms: p50 / mean / p99 / max); "
                 "PAAM: mean per stage of paamd's timestamps")
    for s in setups:
        for m in methods:
            w = summary[s][m].gpu_segment_wall_ms
            if not w or not w["n"]:
                continue
            line = (f"  {s} {m}: {common.fmt(w['p50'], 3)} / {common.fmt(w['mean'], 3)} / "
                    f"{common.fmt(w['p99'], 3)} / {common.fmt(w['max'], 3)}")
            st = summary[s][m].paam_gpu_stages_ms or {}
            if st and next(iter(st.values()))["n"]:
                line += " | " + ", ".join(f"{k} {common.fmt(v['mean'], 3)}" for k, v in st.items())
            lines.append(line)
    _per_run(lines, summary, setups, methods, "paam_gpu_request_ms_by_chain_priority",
             "PAAM GPU request by chain priority (submitted -> woken, ms: n, p50 / p99 / max)",
             lambda by: ", ".join(f"{p}: {v['n']}, {common.fmt(v['p50'])} / "
                                  f"{common.fmt(v['p99'])} / {common.fmt(v['max'])}"
                                  for p, v in by.items()) if by else None)
    _per_run(lines, summary, setups, methods, "drops_by_subscription",
             "dropped samples by subscription (node<-topic, whole recorded run; * hot path)",
             lambda sd: ", ".join(f"{k}{'*' if graph.hot_subscription(k) else ''} {v}"
                                  for k, v in sd.items()) or "none")
    lines.append(f"the host (/proc/stat each second): ms stolen per s from all CPUs, mean / max "
                 f"(executor cores), vCPUs the guest used (busy at least "
                 f"{common.ACTIVE_BUSY_MS_PER_S:g} ms/s), CPUs busy; hot path where the host "
                 f"stole at most {common.QUIET_STEAL_MS:g} ms/s around the instance | more (n, "
                 f"p99 / max ms, drops); latency's correlation with steal")
    for s in setups:
        for m in methods:
            h, sp = summary[s][m].host, summary[s][m].get("hot_path_by_host_steal")
            if not sp:
                if h.get("error"):
                    lines.append(f"  {s} {m}: not sampled ({h['error']})")
                continue
            q, n = sp["quiet"], sp["noisy"]
            lines.append(
                f"  {s} {m}: {common.steal_text(h)} | quiet {q['n']}, "
                f"{common.fmt(q['p99'])} / {common.fmt(q['max'])}, {sp['drops']['quiet']} | "
                f"noisy {n['n']}, {common.fmt(n['p99'])} / {common.fmt(n['max'])}, "
                f"{sp['drops']['noisy']} | r {common.fmt(sp['correlation'], 2)}")
    _per_run(lines, summary, setups, methods, "gc",
             f"Python's collector (--gc {cfg.gc}): collections gen 0/1/2 of all processes, "
             "longest pause (ms); hot-path instances with a collection of their process inside "
             "(of the slowest 1%)", _gc_line)
    lines.append("hot path from the later lidar timer's due time, not its callback's start "
                 "(ms: p50 / p99 / max), and how late that callback started (p50 / max)")
    for s in setups:
        for m in methods:
            h = summary[s][m].hot_path_from_due_ms or {}
            late = summary[s][m].lidar_late_ms or {}
            if h.get("n"):
                lines.append(f"  {s} {m}: {common.fmt_p50_p99_max(h)} | late "
                             f"{common.fmt(late['p50'])} / {common.fmt(late['max'])}")
    _per_run(lines, summary, setups, methods, "hot_executor_from_due",
             "E0 in each instance from the due time (ms, p50 / max): in hot-path callbacks, in "
             "lower-priority ones, outside callbacks; lower-priority callbacks started after "
             "the due time (count: instances); the slowest instance", breakdown_line)
    _per_run(lines, summary, setups, methods, "hot_executor_from_due",
             "E0's time outside callbacks by its thread's scheduler counters (ms, p50 / p99 / "
             "max): its own CPU, runnable but waiting for its CPU, the rest (asleep, or taken by "
             "the host); waiting for its CPU inside callbacks; means in the 1% of instances with "
             "the most time outside callbacks; callbacks per instance, the CPU time of its "
             "longest gap between them, and its CPU time inside callbacks beyond the number "
             "cruncher's burn (Python's and rclpy's: grown with the rest, the CPU ran slower)",
             split_line)
    _per_run(lines, summary, setups, methods, "hot_executor_from_due",
             "--cpu-probe: fixed work on E0's thread before each callback, per instance the "
             "median over its callbacks (µs: p50 / p99 / max, the mean in the 1% of instances "
             "with the most time outside callbacks, its correlation with E0's own CPU time "
             "outside callbacks): C (CRC of 16 KiB), Python (a 256-step loop)", probe_line)
    _per_run(lines, summary, setups, methods, "mt_threads_from_due",
             "MT with one pool of threads, each instance from the due time by what the threads "
             "did (ms, the mean over all instances -> over the slowest 1%; hot callbacks summed, "
             "the two lidar branches may overlap)", threads.thread_line)
    _per_run(lines, summary, setups, methods, "mt_node_overlap_ms",
             "MT with one pool of threads: callbacks of one node running at the same time (ms "
             "over the run, per node; a node's callbacks in one mutually exclusive group never "
             "do)", lambda d: ", ".join(f"{k} {common.fmt(v)}" for k, v in d.items()) or "none")
    _per_run(lines, summary, setups, methods, "analysis",
             "the analysis' bound on the hot path (ms, from the due time; period 100 ms): as "
             "written | + the executor's and Python's cost per callback | + the settings "
             "callback holding E0 through its GPU request (synchronous segments); its inputs; "
             "the maximum observed from the due time", _bound_line)
    _per_run(lines, summary, setups, methods, "later_lidar",
             "which lidar's callback started later (the KPI's start, and its transformer in the "
             "KPI: the rear's holds the TPU segment): instances, hot path p50 / max (ms)",
             lambda d: ", ".join(f"{k} {v['n']}, {common.fmt(v['p50'])} / "
                                 f"{common.fmt(v['max'])}" for k, v in d.items() if v["n"]))
    _per_run(lines, summary, setups, methods, "hot_path_hops_ms",
             "hot path by hop (ms: median / mean of the slowest 1% of instances)",
             lambda hops: ", ".join(f"{k} {common.fmt(v['p50'])} / "
                                    f"{common.fmt(v['slowest_1pct_mean'])}"
                                    for k, v in hops.items()) if hops else None)
    return "\n".join(lines) + "\n"


def breakdown_line(b: dict) -> str:
    w = b["slowest"]
    return (", ".join(f"{common.fmt(b[k]['p50'])} / {common.fmt(b[k]['max'])}"
                      for k in ("hot_ms", "lower_ms", "outside_ms"))
            + "; " + ", ".join(f"{k}: {v}" for k, v in b["lower_started_histogram"].items())
            + f"; slowest {common.fmt(w['hot_ms'] + w['lower_ms'] + w['outside_ms'])} = "
            f"{common.fmt(w['hot_ms'])} + {common.fmt(w['lower_ms'])} "
            f"({int(w['lower_started'])} started inside) + {common.fmt(w['outside_ms'])}")


def split_line(b: dict) -> str | None:
    sp = b.get("outside_split")
    if not sp:
        return None
    top = sp["most_outside_1pct"]
    return (", ".join(common.fmt_p50_p99_max(sp[k]) for k in e0.E0_SPLIT)
            + f" | the 1% with the most ({top['instances']}): {common.fmt(top['outside_ms'])} = "
            + " + ".join(common.fmt(top[k]) for k in e0.E0_SPLIT[:3])
            + f", inside waiting {common.fmt(top['inside_runq_ms'])}; callbacks "
            f"{common.fmt(sp['callbacks']['p50'])} at the median, "
            f"{common.fmt(top['callbacks'])} there; the longest gap's CPU "
            f"{common.fmt(sp['longest_gap_cpu_ms']['p50'])} at the median, "
            f"{common.fmt(top['longest_gap_cpu_ms'])} there; CPU inside callbacks beyond the "
            f"burn {common.fmt(sp['inside_beyond_burn_ms']['p50'])} at the median, "
            f"{common.fmt(top['inside_beyond_burn_ms'])} there")


def probe_line(b: dict) -> str | None:
    pr = b.get("cpu_probe")
    if not pr:
        return None
    return ", ".join(
        f"{name} {common.fmt_p50_p99_max(pr[k], 2)}, "
        f"{common.fmt(pr[k]['most_outside_1pct_mean'], 2)} there, r "
        f"{common.fmt(pr[k]['r_outside_cpu'], 2)}"
        for name, k in (("C", "probe_c_us"), ("Python", "probe_py_us")))


def _bound_text(b: HotPathBound) -> str:
    over = "" if b.schedulable else " (over its period: unschedulable)"
    return f"{common.fmt(b.bound_ms)}{over}"


def _bound_line(b: AnalysisBounds) -> str:
    return (" | ".join(_bound_text(x) for x in (b.as_written, b.with_cost,
                                                 b.with_cost_sync_blocker))
            + f"; epsilon {common.fmt(b.epsilon_ms, 3)}, kappa {b.kappa_ms:g}, cost "
            f"{common.fmt(b.cost_per_callback_ms, 2)} per callback, settings request "
            f"{common.fmt(b.settings_request_max_ms, 2)}; observed "
            f"{common.fmt(b.observed_from_due_max_ms)}")


def _gc_line(g: dict) -> str:
    h = g.get("hot_path")
    return (common.gc_line(g.get("by_process", {}).values())
            + (f" | {h['during_a_collection']} of {h['instances']} "
               f"({h['slowest_1pct_during_a_collection']} of {h['slowest_1pct']})" if h else ""))
