"""Case study 1's report: summary.txt's text and the files of a run (summary.csv, latency.csv,
paam_stages.csv, host_stat.csv, system_scaled.yaml, summary.json)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from paam_experiments.case_study1.executor import STAGES
from paam_experiments.case_study1.kpis import Outcome, num
from paam_experiments.case_study1.system import critical_chain
from paam_experiments.common.collector import gc_line
from paam_experiments.common.host import ACTIVE_BUSY_MS_PER_S, QUIET_STEAL_MS, host_rows, \
    steal_text
from paam_experiments.common.machine import device_core_line, machine_line
from paam_experiments.common.report import fmt, table, write_csv, write_json
from paam_experiments.common.server import direct_wait_label, server_pin_label, \
    server_poll_label


def _by_priority(o: Outcome) -> list:
    return sorted(o.spec.chains, key=lambda c: -c.priority)


def render(o: Outcome) -> str:
    """summary.txt: the latency table against the bound, then what ran and how."""
    c, b, runs, methods = o.config, o.bound, o.runs, o.methods
    summary = o.kpis.chains
    lines = [f"Case study 1, times x{c.scale:g}, {c.duration:g} s per method; chain "
             f"latency in ms (max / p99; missed = timer expiries skipped)",
             machine_line(o.meta),
             f"bound: paam analyze --full with epsilon {b.epsilon_ms:.3f} ms ({b.epsilon_from}), "
             f"kappa {b.kappa_ms} ms; '+ros' adds {b.delta_ms:.3f} ms to every callback's WCET, "
             f"the rclpy/Python cost measured in {b.measured_in} (largest in-callback cost "
             "beyond the burn + largest per-callback time the top chain spent outside its "
             "callbacks); '!' = beyond the deadline, where the analysis' one-instance-at-a-time "
             "assumption no longer holds", ""]
    head = ["chain", "period"] + [f"{m} max/p99" for m in methods] + ["missed", "bound", "+ros"]
    rows = [head]
    for ch in _by_priority(o):
        cells = [ch.name + (" (BE)" if ch.best_effort else ""), fmt(ch.period, 1)]
        for m in methods:
            s = summary[ch.name][m]
            cells.append(f"{fmt(s['max'])} / {fmt(s['p99'])}")
        cells.append("/".join(str(summary[ch.name][m]["missed"]) for m in methods))
        for x in (b.plain[ch.name], b.with_ros[ch.name]):
            cells.append("unbounded" if num(x) is None else
                         fmt(x) + ("!" if x > ch.effective_deadline else ""))
        rows.append(cells)
    lines.append(table(rows, right=range(1, len(head))))
    if getattr(c.server, "server_queue", None) == "edf":
        lines.append("paamd --queue edf: the bound columns are the fixed-priority analysis' "
                     "(--queue fifo); it does not cover EDF inside a bucket and gives no bound "
                     "for it (docs/analysis.md)")
    lines.append("")
    for m, r in runs.results.items():
        notes = sorted(set(r.rt.values()))
        lines.append(f"{m} executor OS priorities: " + " | ".join(notes))
    in_run = o.kpis.stages_in_run
    if in_run:
        lines.append("PAAM request stages in the run (all chains), max µs: " + ", ".join(
            f"{k} {v['max']:.0f}" for k, v in in_run.items()) + " (p99: " + ", ".join(
            f"{v['p99']:.0f}" for v in in_run.values()) + ")")
    idle = runs.idle_overhead_us
    if idle:
        lines.append(f"server overhead on the idle server (2000 requests): max "
                     f"{idle['max']:.0f} µs, mean {idle['mean']:.1f} µs")
    if b.costs_in_run:
        e = b.costs_in_run.epsilon_ms
        lines.append("in the measured PAAM run itself: epsilon "
                     + (f"{e:.3f} ms" if e is not None else "n/a")
                     + f", rclpy cost {b.costs_in_run.delta_ms:.3f} ms per callback")
    if runs.server_note:
        lines.append(runs.server_note)
    if "PAAM" in methods and o.kpis.demand:
        lines.append(device_core_line(o.kpis.demand, o.meta, o.fair))
    if "PAAM" in methods and runs.worker_sched:
        lines.append("paamd's device workers (bucket.lane): " + ", ".join(
            f"{name.split('.', 1)[-1]} {sched}" for name, sched in runs.worker_sched.items()))
    if "PAAM" in methods:
        lines.append(f"paamd busy-poll window: {server_poll_label(c.server)}, threads "
                     f"{server_pin_label(c.server)}; PAAM executors wait: "
                     + ", ".join(f"{e.name} {e.wait}" for e in o.spec.executors.values()))
    if direct_wait := direct_wait_label(c.server, methods):
        lines.append(direct_wait)
    if c.keep_awake:
        lines.append("--keep-awake: a SCHED_IDLE busy loop on every core (but a polling paamd's) "
                     "during every method")
    if c.executor_wait == "rclpy":
        lines.append("--executor-wait rclpy: the PicasExecutor waits through rclpy's "
                     "_wait_for_ready_callbacks")
    if "PAAM" in summary.get(o.spec.chains[0].name, {}):
        over = [ch.name for ch in o.spec.chains if not ch.best_effort
                and num(b.plain[ch.name]) is not None
                and summary[ch.name]["PAAM"]["max"] > b.plain[ch.name]]
        lines.append("PAAM maxima above the bound (paper WCETs): " + (", ".join(over) or "none"))
    if o.kpis.host:
        _render_host(lines, o)
    if o.kpis.gc:
        _render_gc(lines, o)
    _render_faults(lines, o)
    return "\n".join(lines) + "\n"


def _render_host(lines: list, o: Outcome) -> None:
    """summary.txt's host block: per method the steal, and the critical chain's instances where
    the host left the CPUs alone against the others (and, with a bound, those beyond it)."""
    top = critical_chain(o.spec)
    lines.append("the host (/proc/stat each second): ms stolen per s from all CPUs, mean / max "
                 f"(executor cores), vCPUs the guest used (busy at least "
                 f"{ACTIVE_BUSY_MS_PER_S:g} ms/s), CPUs busy" + (
                     f"; {top.name} where the host stole at most {QUIET_STEAL_MS:g} ms/s "
                     "around the instance | more (n, p99 / max ms); instances above the bound "
                     "(paper WCETs; how many noisy); latency's correlation with steal"
                     if top is not None else ""))
    for m in o.methods:
        h = o.kpis.host.get(m, {})
        if "error" in h:
            lines.append(f"  {m}: not sampled ({h['error']})")
            continue
        line = f"  {m}: {steal_text(h)}"
        sp = o.kpis.by_steal.get(m, {}).get(top.name) if top is not None else None
        if sp:
            q, n, ab = sp["quiet"], sp["noisy"], sp.get("above_bound")
            line += (f" | quiet {q['n']}, {fmt(q['p99'])} / {fmt(q['max'])} | "
                     f"noisy {n['n']}, {fmt(n['p99'])} / {fmt(n['max'])}")
            if ab:
                line += (f" | above the bound {fmt(sp['bound_ms'])}: "
                         f"{ab['quiet'] + ab['noisy']} ({ab['noisy']} noisy)")
            line += f" | r {fmt(sp['correlation'], 2)}"
        lines.append(line)


def _render_gc(lines: list, o: Outcome) -> None:
    """summary.txt's collector block: per method the longest pause of any executor, and the
    critical chain's instances with a collection of their own process inside them."""
    lines.append(f"Python's collector (--gc {o.config.gc}): collections gen 0/1/2 summed over the "
                 "executors, longest pause (ms); the critical chain's instances with a "
                 "collection of its process inside (of them above the bound)")
    for m in o.methods:
        g = o.kpis.gc.get(m, {})
        line = f"  {m}: {gc_line(g.get('by_executor', {}).values())}"
        c = g.get("critical")
        if c:
            line += (f" | {c['chain']}: {c['during_a_collection']} of {c['instances']}"
                     + (f" ({c['above_bound_during_a_collection']} of the {c['above_bound']} "
                        f"above {fmt(c['bound_ms'])})" if "bound_ms" in c else ""))
        lines.append(line)


def _render_faults(lines: list, o: Outcome) -> None:
    """summary.txt's page-fault line: per method the executors' page faults in the measured
    window (a fault in a callback is time the analysis does not count)."""
    parts = []
    for m in o.methods:
        r = o.runs.results[m]
        f = r.faults
        if f:
            server = r.server_faults
            parts.append(f"{m} {sum(v[0] for v in f.values())} minor / "
                         f"{sum(v[1] for v in f.values())} major (most in one executor: "
                         f"{max(v[0] + v[1] for v in f.values())}"
                         + (f"; paamd {server[0]} minor / {server[1]} major" if server else "")
                         + ")")
    if parts:
        lines.append("page faults of the executors in the measured run: " + "; ".join(parts))


def write_files(o: Outcome, out: Path) -> str:
    """Every file of the run but the figures, into ``out``; returns summary.txt's text."""
    from paam.analysis.model import dump_yaml
    c, b, results = o.config, o.bound, o.runs.results
    (out / "system_scaled.yaml").write_text(
        f"# case study 1 scaled x{c.scale:g}, CPUs mapped for this machine, epsilon measured "
        f"({b.epsilon_ms:.3f} ms), kappa {b.kappa_ms} ms.\n# `paam analyze --full` on this file "
        "gives the 'bound' column.\n" + dump_yaml(b.system))
    rows, raw = [], []
    for ch in _by_priority(o):
        for m in o.methods:
            s = o.kpis.chains[ch.name][m]
            rows.append({"chain": ch.name, "best_effort": ch.best_effort, "method": m,
                         "instances": s["n"], "missed": s["missed"], "mean_ms": s["mean"],
                         "p99_ms": s["p99"], "max_ms": s["max"],
                         "bound_ms": num(b.plain[ch.name]),
                         "bound_with_ros_cost_ms": num(b.with_ros[ch.name])})
            r = results[m]
            lat = r.latency_ms.get(ch.name, np.array([]))
            ends = r.end_ns.get(ch.name, np.zeros(0, np.int64))
            raw.extend({"chain": ch.name, "method": m, "latency_ms": float(x),
                        "t_s": (int(e) - r.t0_ns) / 1e9} for x, e in zip(lat, ends))
    write_csv(out / "summary.csv", rows)
    write_csv(out / "latency.csv", raw)
    stage_rows = []
    for run_name, r in (("calibration", o.runs.calibration_run), ("measured",
                                                                   results.get("PAAM"))):
        if r is None:
            continue
        for chain, row in zip(r.stage_chain, r.stages_us):
            stage_rows.append({"run": run_name, "chain": chain,
                               **{f"{k.replace(' ', '_')}_us": round(float(v), 1)
                                  for k, v in zip(STAGES, row)}})
    if stage_rows:
        write_csv(out / "paam_stages.csv", stage_rows)
    hrows = [{"method": m, **row} for m in o.methods if results[m].host is not None
             for row in host_rows(results[m].host, o.placement.mapping.values(),
                                  results[m].t0_ns)]
    if hrows:
        write_csv(out / "host_stat.csv", hrows)
    write_json(out / "summary.json", summary_json(o))
    text = render(o)
    (out / "summary.txt").write_text(text)
    return text


def summary_json(o: Outcome) -> dict:
    """summary.json's content."""
    c, b, runs, k = o.config, o.bound, o.runs, o.kpis
    results = runs.results
    return {
        "meta": o.meta, "params": c.params(), "direct_wait": direct_wait_label(c.server, o.methods),
        "cpu_mapping": o.placement.mapping, "device_cpu": o.placement.dev,
        "epsilon_ms": b.epsilon_ms, "epsilon_from": b.epsilon_from,
        "epsilon_idle_us": runs.idle_overhead_us,
        "kappa_ms": b.kappa_ms,
        "calibration_s": c.calibration if runs.calibration_run is not None else 0,
        "costs_for_bound": dataclasses.asdict(b.costs) if b.costs else None,
        "costs_in_measured_run": dataclasses.asdict(b.costs_in_run) if b.costs_in_run else None,
        "paam_stages_in_run_us": k.stages_in_run, "server_threads": runs.server_note,
        "paamd_startup": runs.paamd_said,
        "server_cpus": o.placement.server_cpus,
        "ros_cost_per_callback_ms": b.delta_ms,
        "bound_ms": {name: num(v) for name, v in b.plain.items()},
        "bound_with_ros_cost_ms": {name: num(v) for name, v in b.with_ros.items()},
        "os_priorities": {m: r.rt for m, r in results.items()},
        "executor_wait": {e.name: e.wait for e in o.spec.executors.values()},
        # each method's start, CLOCK_MONOTONIC ns: latency.csv's t_s counts from it (to line the
        # instances up with a trace taken meanwhile)
        "t0_ns": {m: r.t0_ns for m, r in results.items()},
        "device_bucket_demand": k.demand,
        "fair_buckets": o.fair,  # the lowest buckets paamd kept off SCHED_FIFO (cpu backend)
        "paamd_workers": runs.worker_sched,  # each device worker's OS scheduling, from /proc
        "results": k.chains, "host": k.host, "latency_by_host_steal": k.by_steal, "gc": k.gc,
        # per method and executor: the process's page faults in the measured window
        "page_faults": {m: {"minor_major": r.faults,
                            **({"paamd": r.server_faults} if r.server_faults is not None
                               else {})}
                        for m, r in results.items()}}
