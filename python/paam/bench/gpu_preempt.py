"""``paam bench gpu-preempt``: how long low-priority work delays a high-priority kernel, per
built-in kernel kind, with the low-priority kernel unsliced and preemptible in slices (paamd
``--gpu-preempt``), through the C++ binary ``paam_gpu_bench preempt``.

For each kind the kernel runs on the lowest-priority stream and the same kernel (spin: a shorter
one) arrives on the highest-priority stream at a random time within the first one's run (or
after ``--lead-us``); the delay is the high-priority kernel's time minus its time alone. Sliced,
the low-priority kernel pauses at its next slice boundary once the high-priority one comes and
resumes after it; its time alone, sliced against unsliced, is what slicing costs it.
``--raw FILE`` renders a raw JSON the binary wrote before (another machine's run), with no GPU.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from paam import figures
from paam.bench.gpu_device import run_binary
from paam.bench.gpu_report import md_table, payload_header, write_outputs

TARGET_P99_US = 32.0  # issue: the delay at p99 that fine-grained preemption must stay under


def binary_args(args: argparse.Namespace) -> list[str]:
    """``paam_gpu_bench preempt`` arguments for the parsed options."""
    sub = ["preempt", "--kernels", ",".join(args.kernels), "--iters", str(args.iters), "--slicing", args.slicing,
           "--slice-us", str(args.slice_us), "--matmul", str(args.matmul), "--spin-us", str(args.spin_us),
           "--spin-lp-us", str(args.spin_lp_us)]
    return sub + (["--random-lead"] if args.lead_us is None else ["--lead-us", str(args.lead_us)])


def table(raw: dict[str, Any]) -> str:
    """The Markdown table of one run: a row per kernel kind and slicing mode."""
    rows = []
    for name, k in raw["kernels"].items():
        cost = k.get("lp_slicing_cost")
        for mode, m in k["modes"].items():
            d = m["delay_us"]
            rows.append([name, k["shape"], mode, m["alone_us"]["mean"], d["mean"], d["p99"], d["max"],
                         m["lp_alone_us"]["mean"],
                         f"{100 * cost:+.1f}%" if mode == "on" and cost is not None else "",
                         f"{100 * m['hp_finished_first']:.1f}%", f"{100 * m['lp_paused']:.1f}%"])
    lead = ("a random time within the LP kernel's run" if raw.get("random_lead")
            else f"{raw['lead_us']} µs after the LP launch")
    dev = raw["device"]
    return (f"Delay (µs) of a high-priority kernel by the same low-priority kernel (spin: a longer one), "
            f"{raw['iters']} iterations per row, HP arriving at {lead}; slice {raw['slice_us']} µs; "
            f"{dev['name']}, stream priorities {dev['stream_priority_least']}..{dev['stream_priority_greatest']}\n\n" +
            md_table(["kernel", "shape", "slicing", "HP alone", "delay mean", "delay p99", "delay max",
                      "LP alone", "LP cost", "HP ends first", "LP paused"], rows))


def plot(raw: dict[str, Any], path: Path) -> None:
    """Before/after per kernel kind: delay mean, p99 and max unsliced and sliced, and what slicing
    costs the low-priority kernel."""
    plt = figures.pyplot()
    names = list(raw["kernels"])
    modes = [m for m in ("off", "on") if any(m in raw["kernels"][n]["modes"] for n in names)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [3, 1.3]})
    x = np.arange(len(names))
    width = 0.8 / max(1, len(modes))
    colors = {"off": "#c44e52", "on": "#4c72b0"}
    labels = {"off": "unsliced", "on": f"sliced ({raw['slice_us']:g} µs)"}
    for i, mode in enumerate(modes):
        pos = x + (i - (len(modes) - 1) / 2) * width
        get = lambda key, n: raw["kernels"][n]["modes"].get(mode, {}).get("delay_us", {}).get(key, np.nan)
        ax1.bar(pos, [get("p99", n) for n in names], width, color=colors[mode], label=f"{labels[mode]}: p99")
        ax1.scatter(pos, [get("mean", n) for n in names], color="white", edgecolor="black", zorder=3, s=18,
                    label="mean" if i == 0 else None)
        ax1.scatter(pos, [get("max", n) for n in names], color="black", marker="v", zorder=3, s=18,
                    label="max" if i == 0 else None)
    ax1.axhline(TARGET_P99_US, color="gray", linestyle="--", linewidth=1, label=f"{TARGET_P99_US:g} µs")
    ax1.set_xticks(x, names)
    ax1.set_ylabel("delay of the high-priority kernel (µs)")
    ax1.set_yscale("symlog", linthresh=10)
    top = max([m["delay_us"]["max"] for n in names for m in raw["kernels"][n]["modes"].values()] + [TARGET_P99_US])
    ax1.set_ylim(-10, top * 3)
    ax1.set_title(f"delay by low-priority work, {raw['device']['name']}")
    ax1.legend(fontsize=8, ncol=3, loc="upper center")
    costs = [100 * raw["kernels"][n].get("lp_slicing_cost", np.nan) for n in names]
    ax2.bar(x, costs, 0.6, color=colors["on"])
    ax2.axhline(0, color="black", linewidth=0.8)
    ax2.set_xticks(x, names, rotation=30, ha="right")
    ax2.set_ylabel("LP kernel time alone, sliced vs unsliced (%)")
    ax2.set_title("what slicing costs")
    figures.save(fig, path, dpi=120)


def cmd_preempt(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if getattr(args, "raw", None):
        try:
            raw = json.loads(Path(args.raw).read_text())
        except (OSError, ValueError) as exc:
            raise SystemExit(f"gpu-preempt --raw {args.raw}: cannot read it: {exc}") from exc
        if "modes" not in next(iter(raw.get("kernels", {}).values()), {}):
            raise SystemExit(f"gpu-preempt --raw {args.raw}: not a 'paam_gpu_bench preempt' JSON of per-mode "
                             "figures (a run with --slicing)")
    else:
        raw = run_binary(args, binary_args(args), out / "preempt.raw.json")
    payload = payload_header(args, "gpu-preempt") | {"result": raw}
    write_outputs(out, "preempt", payload, table(raw), lambda p: plot(raw, p))
    return 0
