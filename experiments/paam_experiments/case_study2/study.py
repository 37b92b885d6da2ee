"""The whole case study from its :class:`.config.Config`: check the machine and the options,
run every setup x method (:mod:`.runner`), summarize (:mod:`.kpis`), write the result files
(:mod:`.outputs`, :mod:`.report`) and draw the figures (:mod:`.plots`)."""
from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path

from paam_experiments import common
from paam_experiments.case_study2 import graph, kpis, outputs, plots, report, runner
from paam_experiments.case_study2.config import Config, resolve
from paam_experiments.case_study2.placement import Placement, cores_line, placement_for
from paam_experiments.common.machine import ros_missing

_FIGURES = "fig11a_hot_path_latency.png, fig11b_bp_period.png, fig11c_drops.png"


def replot(cfg: Config) -> int:
    out = common.out_dir(cfg.out)
    inputs = [Path(x.strip()) for x in cfg.inputs.split(",") if x.strip()] or [out]
    plots.replot(out, inputs)
    print(f"redrew {out}/{_FIGURES}")
    return 0


def _suspend_where_cores_are_shared(cfg: Config, placement: Placement) -> Config:
    """A callback spinning on a core it shares holds every lower executor there off it for its
    whole segment (the analysis' spin(h) = H*h) and, above paamd's dispatcher on the
    dispatcher's core, keeps its own request from being dispatched: where the executors share
    cores or paamd has none of its own, spinning waits become suspending ones (with a note)."""
    if not placement.shares_cores():
        return cfg
    for flag, attr in (("--wait", "wait"), ("--hot-wait", "hot_wait")):
        if getattr(cfg, attr) not in (None, "suspend"):
            print(f"  {flag} {getattr(cfg, attr)} ignored: the executors share cores, or "
                  "paamd has none of its own, on this machine; those callbacks suspend",
                  flush=True)
            cfg = dataclasses.replace(cfg, **{attr: "suspend"})
    return cfg


def run(cfg: Config) -> int:
    if cfg.replot:
        return replot(cfg)
    why = ros_missing()
    if why:
        print(f"paam eval case-study-2: {why}")
        return 2
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(100, 200)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    cfg = resolve(cfg)
    if cfg.e0_executor == "cpp":
        from paam_experiments.case_study2 import cpp
        try:
            cpp.program()
        except FileNotFoundError as err:
            raise SystemExit(f"--e0-executor cpp: {err}") from None
    setups, methods = cfg.setup_names(), cfg.method_names()
    pl = placement_for(cfg.backend)
    cfg = _suspend_where_cores_are_shared(cfg, pl)
    dem = graph.demand(cfg.gpu_ms_eff, cfg.tpu_ms_eff, cfg.scale)
    out = common.out_dir(cfg.out)
    meta = common.machine_meta(cfg.backend)
    print(f"paam eval case-study-2: the Autoware reference system ({len(graph.SYSTEM)} nodes), "
          f"run times and segments x{cfg.scale:g} (GPU {cfg.gpu_ms_eff:g} ms, TPU "
          f"{cfg.tpu_ms_eff:g} ms), {cfg.duration:g} s per run, setups {'/'.join(setups)}, "
          f"methods {'/'.join(methods)}\n  {common.machine_line(meta)}\n  executor CPUs: "
          + cores_line(pl, cfg, sep=" core ") + "\n  demand per 4ST executor (CPU ms/s): "
          + ", ".join(f"{k} {v.cpu_ms_per_s:.0f}" for k, v in dem.executors.items())
          + f"; GPU {dem.gpu_ms_per_s:.0f} ms/s, TPU {dem.tpu_ms_per_s:.0f} ms/s, "
          f"{dem.callbacks_per_s:.0f} callbacks/s", flush=True)

    runs = runner.run_all(cfg, pl)

    summary: report.Summary = {}
    breakdowns: dict[tuple[str, str], kpis.Breakdowns] = {}
    for (setup, m), r in runs.results.items():
        bd = breakdowns[(setup, m)] = kpis.breakdowns(r)
        summary.setdefault(setup, {})[m] = kpis.summarize_run(setup, m, r, bd, cfg, pl)
    outputs.write(out, cfg, runs, summary, breakdowns, meta, pl, dem)
    text = report.render(summary, setups, methods, meta, cfg, pl, dem)
    (out / "summary.txt").write_text(text)
    print("\n" + text)
    try:
        plots.draw(runs.results, setups, methods, out, cfg.scale, cfg.gpu_ms)
        host = plots.draw_host(runs.results, setups, methods, out / "fig11d_host_steal.png",
                               cfg.scale, cfg.gpu_ms)
        print(f"wrote {out}/summary.csv, hot_path.csv, bp_period.csv, summary.json, "
              f"summary.txt, {_FIGURES}"
              + (", host_stat.csv, fig11d_host_steal.png" if host else ""))
    except Exception as exc:  # noqa: BLE001
        print(f"wrote {out}/summary.*, hot_path.csv, bp_period.csv (no plots: {exc})")
    return 0

