"""Case study 1 end to end: the system placed on this machine, every method run, the bound and
the KPIs computed, the report and the figures written."""
from __future__ import annotations

import os
import random

from paam_experiments.case_study1 import plots, report
from paam_experiments.case_study1.config import Config
from paam_experiments.case_study1.kpis import Outcome, compute_bound, compute_kpis
from paam_experiments.case_study1.runner import Placement, run_methods
from paam_experiments.case_study1.system import fair_buckets, scaled_system, select_chains, \
    set_wait
from paam_experiments.common.cpus import device_cpu, host_cpus
from paam_experiments.common.machine import machine_line, machine_meta, ros_missing
from paam_experiments.common.report import out_dir
from paam_experiments.common.server import server_cores


def run(config: Config) -> int:
    """Runs the case study as ``config`` says and writes its results into ``config.out``;
    returns the exit status (2 without ROS 2)."""
    missing = ros_missing()
    if missing:
        print(f"paam eval case-study-1: {missing}")
        return 2
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(100, 200)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    config.apply_quick()
    methods = config.check()
    cpus = host_cpus(config.backend)
    dev = device_cpu() if config.backend == "cpu" else -2
    spec, mapping = scaled_system(config.system, config.scale, cpus)
    mapping = select_chains(spec, mapping, config.chain_names())
    # paamd (dispatcher, control thread, CUDA workers) on the cores no executor uses, where
    # there are any: on a shared core it would wait for the executors' fair-scheduler slices.
    server_cpus = server_cores(
        config.server, sorted(set(range(os.cpu_count() or 1)) - set(mapping.values()) - {dev}))
    if config.wait and config.wait != "suspend" and not server_cpus:
        # paamd's dispatcher would share a core with executors above it: one spinning there
        # would keep its own request from being dispatched.
        print(f"  --wait {config.wait} ignored: no core left to paamd; the executors wait as "
              "the system says", flush=True)
    elif config.wait:
        set_wait(spec, config.wait)
    fair = fair_buckets(spec, config.backend, config.rt, config.fair_buckets)
    placement = Placement(cpus=cpus, dev=dev, mapping=mapping, server_cpus=server_cpus)
    out = out_dir(config.out)
    meta = machine_meta(config.backend)
    print(f"paam eval case-study-1: {len(spec.chains)} chains on {len(spec.executors)} executor "
          f"processes, times x{config.scale:g}, {config.duration:g} s per method\n"
          f"  {machine_line(meta)}\n  executor CPUs: "
          + ", ".join(f"{k}->{v}" for k, v in mapping.items())
          + (f"; device core {dev}" if config.backend == "cpu" else "")
          + (f"; paamd on CPUs {','.join(map(str, server_cpus))}" if server_cpus else ""),
          flush=True)

    runs = run_methods(config, spec, placement, methods, fair)
    bound = compute_bound(config, spec, runs)
    kpis = compute_kpis(config, spec, methods, runs, bound, placement)
    outcome = Outcome(config=config, spec=spec, methods=methods, meta=meta, placement=placement,
                      fair=fair, runs=runs, bound=bound, kpis=kpis)
    text = report.write_files(outcome, out)
    print("\n" + text)
    try:
        figures = plots.draw(outcome, out)
        print(f"wrote {out}/summary.csv, latency.csv, paam_stages.csv, summary.json, summary.txt, "
              "system_scaled.yaml, " + ", ".join(figures))
    except Exception as exc:  # noqa: BLE001 - the table is the main output
        print(f"wrote {out}/summary.*, latency.csv (no plots: {exc})")
    return 0
