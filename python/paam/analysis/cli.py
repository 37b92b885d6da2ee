"""``paam analyze``, ``paam plan`` and ``paam experiment schedulability``.

Exit status of ``analyze`` and ``plan``: 0 every critical chain is schedulable, 1 not, 2 bad
input (the message names the chain and the field); ``analyze --queue edf``: 3, no verdict (the
analysis does not cover EDF inside a bucket).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from paam.analysis.model import INT32_RANGE, InputError, check_range

EXIT_SCHEDULABLE = 0
EXIT_UNSCHEDULABLE = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_COVERED = 3

#: what ``paam analyze --queue edf`` says (and paamd's refusal of --admission analysis with it)
EDF_NOT_COVERED = (
    "no bound: paamd --queue edf orders the requests inside a bucket by absolute deadline, and "
    "this response-time analysis covers requests served by chain priority inside a bucket "
    "(--queue fifo) only; it gives no bound for EDF inside a bucket, so no chain is shown "
    "schedulable (docs/analysis.md, \"EDF inside a bucket\")")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze", help="worst-case end-to-end bounds of every chain of a system file",
        description="Response-time analysis of PAAM (see docs/analysis.md). Prints the system's "
                    "description (if its file has one), then one row per chain. Exit status: 0 "
                    "schedulable, 1 not schedulable, 2 bad input. Example systems ship in the "
                    "paam.examples package (python/paam/examples/ in the source tree): "
                    "mobile_robot.yaml (schedulable) and case_study_1.yaml (the paper's case "
                    "study 1, not schedulable).")
    p.add_argument("file", help="system description (YAML, times in ms)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--bound", choices=("min", "per-segment", "per-chain"), default="min",
                   help="accelerator handling-time bound: min of Lemmas 2 and 3 (default), or "
                        "one lemma alone")
    p.add_argument("--blocking", choices=("cpu", "callback"), default="cpu",
                   help="what a lower-priority callback on the same executor blocks a chain "
                        "with: its CPU WCET (default, the paper's Lemma 4) or its CPU WCET "
                        "plus its accelerator segments' handling time (safe when executors "
                        "share chains that use accelerators; docs/analysis.md)")
    p.add_argument("--full", action="store_true",
                   help="iterate past the deadline so a missing chain shows its real bound "
                        "(the verdicts do not change)")
    p.add_argument("--gpu-slice-us", type=float, default=None, metavar="US",
                   help="every accelerator's server preempts its lower buckets in slices of US "
                        "microseconds (paamd --gpu-preempt --gpu-slice-us): kappa = the slice plus "
                        "its launch, in place of the file's preemption (docs/analysis.md)")
    p.add_argument("--queue", choices=("fifo", "edf"), default="fifo",
                   help="the order paamd serves a bucket in (its --queue): fifo (default), by "
                        "chain priority, which the analysis covers; edf, by absolute deadline, "
                        "which it does not: the file is checked, no bound is given, exit "
                        "status 3")
    p.set_defaults(func=cmd_analyze)

    p = subparsers.add_parser(
        "plan", help="PiCAS planning: priorities, executors, CPUs, accelerator units",
        description="Callback priorities (PiCAS Algorithm 1), chain-aware allocation of "
                    "callbacks to executors and executors to CPUs with executor priorities, "
                    "accelerator units by worst-fit decreasing. Writes a complete system file "
                    "and reports the bounds before and after. Exit status as for analyze.")
    p.add_argument("file", help="system description (YAML); callbacks may omit 'executor' and "
                                "segments may name an accelerator type")
    p.add_argument("-o", "--output", help="where to write the planned system "
                                          "(default: <file stem>.planned.yaml beside it)")
    p.add_argument("--cpus", help="CPUs to use, e.g. 2,3,4,5 (default: plan.cpus of the file, "
                                  "else the CPUs of its executors)")
    p.add_argument("--executor-priority", type=int,
                   help="OS priority of the first executor on each CPU (default 90)")
    p.add_argument("--wait", choices=("spin", "suspend", "hybrid"),
                   help="wait mode of the planned executors (default suspend)")
    p.set_defaults(func=cmd_plan)

    p = subparsers.add_parser("experiment", help="analytical experiments (PAAM paper Fig. 14)")
    sub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    sub.required = True
    s = sub.add_parser(
        "schedulability",
        help="fraction of schedulable random chain sets (Fig. 14a and 14b)",
        description="Fig. 14 of the PAAM paper on random chain sets: (a) versus the number of "
                    "chains, (b) versus the accelerator:CPU utilization ratio. Writes CSV, PNG "
                    "and params.json into the output folder.")
    s.add_argument("--out", default="results/schedulability", help="output folder")
    s.add_argument("--sets", type=int, help="random chain sets per point (default 1000)")
    s.add_argument("--quick", action="store_true",
                   help="a smoke run: 20 sets per point and fewer points")
    s.add_argument("--seed", type=int, default=2026)
    s.add_argument("--jobs", type=int, default=0, help="threads (default: every CPU)")
    s.add_argument("--cpus", type=int, help="CPUs of the generated systems (default 4)")
    s.add_argument("--executors-per-cpu", type=int, help="default 4")
    s.add_argument("--utilization", type=float,
                   help="mean utilization (E+A)/T of a chain (default 0.03)")
    s.add_argument("--buckets", type=int, help="accelerator buckets (default 4)")
    s.add_argument("--overhead", type=float, help="epsilon in ms (default 0.05)")
    s.add_argument("--preemption", type=float, help="kappa in ms (default 0.13)")
    s.add_argument("--wait", choices=("spin", "suspend"), help="executor wait mode")
    s.add_argument("--chains-for-ratios", type=int,
                   help="chains per set in experiment (b) (default 14)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_schedulability)


def _error(message: str) -> int:
    print(f"paam: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def cmd_analyze(args: argparse.Namespace) -> int:
    from paam.analysis.bounds import analyze
    from paam.analysis.model import load_system
    from paam.analysis.report import chain_table, description_text, summary
    try:
        spec = load_system(args.file)
        _apply_slices(spec, args.gpu_slice_us)
        if args.queue == "edf":
            return _not_covered(spec, args.json)
        result = analyze(spec, handling=args.bound, blocking=args.blocking,
                         stop_at_deadline=not args.full)
    except InputError as exc:
        return _error(str(exc))
    if args.json:
        data = result.to_json()
        if spec.description is not None:
            data = {"description": spec.description} | data
        if any(a.slice > 0 for a in spec.accelerators.values()):
            data["kappa_ms"] = {a.name: a.kappa() for a in spec.accelerators.values()}
        print(json.dumps(data, indent=2))
    else:
        if spec.description:
            print(description_text(spec.description))
            print()
        print(chain_table(result))
        print()
        print(summary(result))
        for a in spec.accelerators.values():
            if a.slice > 0:
                print(f"kappa of {a.name}: {a.kappa():.3f} ms (preemption in {a.slice * 1000:g} us slices, "
                      f"plus their launch), not the file's {a.preemption:g} ms")
        print("times in ms; H* = accelerator handling incl. server overhead; '>=' = iteration "
              "stopped past the deadline (use --full for the real bound)")
    return EXIT_SCHEDULABLE if result.schedulable else EXIT_UNSCHEDULABLE


def _not_covered(spec, as_json: bool) -> int:
    """``analyze --queue edf``: the file loaded (bad input still exits 2), no bound given."""
    chains = [c.name for c in spec.chains]
    if as_json:
        print(json.dumps({"queue": "edf", "covered": False, "schedulable": None,
                          "message": EDF_NOT_COVERED, "chains": chains}, indent=2))
    else:
        print(f"{len(chains)} chain(s): {', '.join(chains)}")
        print(EDF_NOT_COVERED)
    return EXIT_NOT_COVERED


def _apply_slices(spec, slice_us: float | None) -> None:
    """``analyze --gpu-slice-us``: every accelerator preempted in slices of that length."""
    if slice_us is None:
        return
    if not 0 < slice_us <= 10_000:
        raise InputError(f"--gpu-slice-us must be above 0 and at most 10000, got {slice_us:g}")
    for a in spec.accelerators.values():
        a.slice = slice_us / 1000.0


def cmd_plan(args: argparse.Namespace) -> int:
    import yaml

    from paam.analysis.bounds import analyze
    from paam.analysis.model import dump_yaml, load_system, parse_system
    from paam.analysis.plan import options_for, plan
    from paam.analysis.report import comparison_table, summary
    try:
        spec = load_system(args.file, for_planning=True)
        cpus = None
        if args.cpus:
            try:
                cpus = [int(c) for c in args.cpus.split(",") if c.strip()]
            except ValueError:
                raise InputError(f"--cpus: expected numbers like 2,3,4, got {args.cpus!r}")
        options = options_for(spec, cpus, args.executor_priority, args.wait)
        _check_plan_ranges(spec, options, from_command_line=(cpus is not None,
                                                             args.executor_priority is not None))
        before = None
        try:
            before = analyze(spec, stop_at_deadline=False)
        except InputError as exc:
            print(f"before: not analysable as given ({exc})")
        # The input's description need not hold for the planned system (its verdict, say).
        planned = dataclasses.replace(plan(spec, options), description=None)
        text = dump_yaml(planned)
        parse_system(yaml.safe_load(text))  # what we write must load back as is
        after = analyze(planned, stop_at_deadline=False)
    except InputError as exc:
        return _error(str(exc))
    out = Path(args.output) if args.output else Path(args.file).with_suffix(".planned.yaml")
    header = (f"# Planned by `paam plan {args.file}`: callback priorities (PiCAS Algorithm 1),\n"
              f"# chain-aware executor allocation on CPUs {options.cpus}, accelerator units "
              "by WFD.\n")
    try:
        out.write_text(header + text)
    except OSError as exc:
        return _error(f"{out}: cannot write the planned system: {exc.strerror or exc}")
    print(comparison_table(before, after))
    print()
    print(summary(after))
    print("executors: " + ", ".join(f"{e.name} (cpu {e.cpu}, prio {e.priority})"
                                     for e in planned.executors.values()))
    print(f"wrote {out}")
    return EXIT_SCHEDULABLE if after.schedulable else EXIT_UNSCHEDULABLE


def _check_plan_ranges(spec, options, *, from_command_line: tuple[bool, bool]) -> None:
    """CPUs and executor priorities of the planned executors must fit the analysis' ints.

    The planner gives the k-th executor it creates on a CPU ``executor_priority - k``; there
    are at most as many executors as callbacks, hence the lower limit.
    """
    cpus_flag, prio_flag = from_command_line
    where, key = ("--cpus", None) if cpus_flag else ("plan", "cpus")
    for cpu in options.cpus:
        check_range(cpu, where, key, INT32_RANGE)
    where, key = ("--executor-priority", None) if prio_flag else ("plan", "executor_priority")
    callbacks = sum(len(c.callbacks) for c in spec.chains)
    check_range(options.executor_priority, where, key,
                (INT32_RANGE[0] + callbacks, INT32_RANGE[1]))


def cmd_schedulability(args: argparse.Namespace) -> int:
    from paam.analysis import study
    config = study.StudyConfig()
    gen = config.generator
    if args.quick:
        config.sets = 20
        config.chains = [2, 10, 18]
        config.ratios = [(1, 9), (5, 5), (7, 3)]
    if args.sets is not None:
        config.sets = args.sets
    config.seed = args.seed
    config.jobs = args.jobs
    for attr, value in (("cpus", args.cpus), ("executors_per_cpu", args.executors_per_cpu),
                        ("utilization_per_chain", args.utilization), ("buckets", args.buckets),
                        ("overhead", args.overhead), ("preemption", args.preemption),
                        ("wait", args.wait)):
        if value is not None:
            setattr(gen, attr, value)
    if args.chains_for_ratios is not None:
        config.chains_for_ratios = args.chains_for_ratios
    if config.sets < 1:
        return _error("--sets must be at least 1")

    total = config.sets * len(study.points(config))
    bar = None
    if not args.no_progress:
        from tqdm import tqdm
        bar = tqdm(total=total, unit="set", desc="schedulability")
    try:
        pts, elapsed = study.timed_run(config, bar.update if bar else None)
    except ValueError as exc:
        return _error(str(exc))
    finally:
        if bar:
            bar.close()
    files = study.write_results(config, pts, Path(args.out), elapsed)
    for experiment, label in (("chains", "(a) chains"), ("ratio", "(b) acc:CPU")):
        row = "  ".join(f"{p.x}:{p.fraction():.2f}" if experiment == "chains"
                        else f"{p.x}={p.fraction():.2f}"
                        for p in pts if p.experiment == experiment)
        print(f"{label}: {row}")
    print(f"{total} sets in {elapsed:.1f} s; wrote " + ", ".join(str(f) for f in files))
    return 0
