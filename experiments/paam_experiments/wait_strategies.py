"""``paam eval wait-strategies``: how a client waits for the accelerator (the COSMIC study).

A pipeline of ``--units`` processing units shares one device. Every ``--period-ms`` a frame is
released to all units at once (the camera); each unit runs one kernel of ``--kernel-ms`` on the
device and waits for it. Five ways to do that:

* ``paam-spin``, ``paam-suspend``, ``paam-hybrid``: each unit is a process with a
  ``paam.Client`` of that wait mode; paamd runs the kernels (one context on a GPU);
* ``direct-processes``: each unit is a process that runs its kernels itself (direct invocation,
  one context per process on a GPU: the driver time-slices them);
* ``direct-threads``: the units are threads of one process running their kernels themselves
  (one context).

Per request (submit to result, as the unit sees it) and per frame (first submit to last
result): mean execution time (MET), maximum measured execution time (MMET), average jitter
(mean absolute deviation from MET), peak-to-valley jitter (MMET − min), percentiles; histograms
and execution profiles (every iteration's time in order). Writes ``summary.csv``,
``summary.json``, ``raw/<config>.npz`` (per-iteration start/end/device ns of every unit),
``histograms.png`` and ``profiles.png``.

On the CPU backend one core plays the device (paamd's workers, or the direct kernels, are
pinned there) and the units run on the other cores.

Long runs: ``--concurrent`` runs every configuration at once, each with a device of its own (a
GPU; on the CPU backend a core) and an equal share of the cores: 10^6 frames of five
configurations in the time of one;
``--from-raw DIR...`` analyses raw files again, joining the parts of one configuration that
several runs wrote (each part's warm-up dropped), so a run cut into pieces reports as one.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from paam.figures import pyplot, save
from paam_experiments.common.cpus import device_cpu, host_cpus, pin_this_thread
from paam_experiments.common.machine import machine_line, machine_meta
from paam_experiments.common.report import fmt, out_dir, table, write_csv, write_json
from paam_experiments.common.stats import summarize

CONFIGS = ("paam-spin", "paam-suspend", "paam-hybrid", "direct-processes", "direct-threads")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--iterations", type=int, default=1_000_000,
                   help="frames per configuration (default 1000000, the COSMIC study's count)")
    p.add_argument("--units", type=int, default=2, help="units sharing the device (default 2)")
    p.add_argument("--kernel-ms", type=float, default=0.25,
                   help="device time of each unit's kernel, the 'spin' kernel (default 0.25, "
                        "COSMIC's matrix-vector product)")
    p.add_argument("--period-ms", type=float, default=0.0,
                   help="frame period (default: 2 x units x kernel + 0.5 ms)")
    p.add_argument("--warmup", type=int, default=0,
                   help="frames dropped at the start (default: 1%%, at least 20)")
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of "
                   + ", ".join(CONFIGS))
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--hybrid-spin-us", type=float, default=20.0,
                   help="spin window of the hybrid wait (default 20)")
    p.add_argument("--concurrent", action="store_true",
                   help="run the configurations at the same time, each with a device of its own "
                        "(cuda: a GPU per configuration; cpu: the last core of its share) and an "
                        "equal share of the cores")
    p.add_argument("--from-raw", nargs="+", metavar="DIR", default=None,
                   help="measure nothing: analyse the raw files (DIR/raw/<config>.npz or "
                        "DIR/<config>.npz) of earlier runs; the parts of one configuration "
                        "found in several DIRs are joined in the order given")
    p.add_argument("--no-plots", action="store_true", help="write no PNGs")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke scale: 300 frames, 2 units")
    p.add_argument("--out", default="results/eval/wait-strategies")



@dataclasses.dataclass
class Workload:
    """What every unit runs: ``frames`` frames of ``period_ms``, one kernel of ``kernel_ms`` per
    unit and frame, on ``backend`` (the CPU backend's device core ``device_cpu``; -2 on cuda),
    the hybrid wait's spin window, and the cores of the units."""

    frames: int
    units: int
    kernel_ms: float
    period_ms: float
    backend: str
    hybrid_spin_us: float
    device_cpu: int
    client_cpus: list[int]


# -- the units ----------------------------------------------------------------------------------


def _unit_loop(config: str, unit: int, workload: Workload, socket: str | None, start_at: float,
               out: dict) -> None:
    import paam
    direct = config.startswith("direct")
    wait = config.split("-", 1)[1] if not direct else "suspend"
    n = workload.frames
    period = workload.period_ms / 1e3
    start = np.zeros(n, dtype=np.int64)
    end = np.zeros(n, dtype=np.int64)
    dev = np.zeros(n, dtype=np.int64)
    with paam.Client(priority=10, kernels=["spin"], wait=wait, socket=socket,
                     name=f"{config}-u{unit}", direct=direct, direct_backend=workload.backend,
                     device_cpu=workload.device_cpu, hybrid_spin_us=workload.hybrid_spin_us) as c:
        kernel_ms = workload.kernel_ms
        c.request("spin", duration_ms=kernel_ms)  # first-use costs (page faults, JIT) out
        mono = time.monotonic
        sleep = time.sleep
        request = c.request
        stamps = c.timestamps
        for i in range(n):
            release = start_at + i * period
            left = release - mono()
            if left > 0:
                sleep(left)
            t0 = time.monotonic_ns()
            request("spin", duration_ms=kernel_ms)
            t1 = time.monotonic_ns()
            ts = stamps("spin")
            start[i], end[i] = t0, t1
            dev[i] = ts["device_end"] - ts["device_start"]
    out[unit] = (start, end, dev)


def _worker_main(config: str, units: list[int], workload: Workload, socket: str | None,
                 start_at: float, path: str, client_cpus: list[int]) -> None:
    """One process: its units as threads (one unit unless direct-threads)."""
    pin_this_thread(client_cpus)
    out: dict = {}
    errors: list[str] = []

    def run(u: int) -> None:
        try:
            _unit_loop(config, u, workload, socket, start_at, out)
        except Exception as exc:  # noqa: BLE001 - reported by the parent
            errors.append(f"unit {u}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(u,)) for u in units]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        Path(path + ".err").write_text("\n".join(errors))
        return
    np.savez(path, **{f"u{u}_{k}": arr for u, (s, e, d) in out.items()
                      for k, arr in (("start", s), ("end", e), ("dev", d))})


def run_config(config: str, workload: Workload, socket: str | None, tmp: str) -> dict[int, dict]:
    ctx = mp.get_context("spawn")
    k = workload.units
    groups = [list(range(k))] if config == "direct-threads" else [[u] for u in range(k)]
    # Start time far enough ahead for every process to start and register.
    start_at = time.monotonic() + 1.5 + 0.3 * len(groups)
    procs, paths = [], []
    for g, units in enumerate(groups):
        path = os.path.join(tmp, f"{config}-{g}.npz")
        paths.append(path)
        p = ctx.Process(target=_worker_main,
                        args=(config, units, workload, socket, start_at, path,
                              workload.client_cpus))
        p.start()
        procs.append(p)
    budget = 60 + workload.frames * workload.period_ms / 1e3 * 3
    for p in procs:
        p.join(budget)
        if p.is_alive():
            p.kill()
            raise SystemExit(f"{config}: a unit did not finish within {budget:.0f} s")
    data: dict[int, dict] = {}
    for path in paths:
        if os.path.exists(path + ".err"):
            raise SystemExit(f"{config} failed: {Path(path + '.err').read_text()}")
        with np.load(path) as z:
            for name in z.files:
                u, kind = name[1:].split("_")
                data.setdefault(int(u), {})[kind] = z[name]
    return data


# -- analysis -----------------------------------------------------------------------------------


def analyse(data: dict[int, dict]) -> dict:
    """Per request, per frame and device-time summaries of ``data`` (warm-up already dropped)."""
    units = sorted(data)
    exec_us = np.concatenate(_exec_us(data))
    dev_us = np.concatenate([data[u]["dev"] / 1e3 for u in units])
    starts = np.stack([data[u]["start"] for u in units])
    ends = np.stack([data[u]["end"] for u in units])
    frame_us = (ends.max(axis=0) - starts.min(axis=0)) / 1e3
    return {"request": summarize(exec_us), "frame": summarize(frame_us),
            "device": summarize(dev_us)}


def save_raw(path: Path, data: dict[int, dict], workload: Workload, warmup: int,
             meta: dict) -> None:
    """Per-iteration start/end/device ns of every unit, with the parameters that made them and
    where (``meta``)."""
    params = {**dataclasses.asdict(workload), "warmup": warmup, "meta": meta}
    np.savez_compressed(path, params_json=np.array(json.dumps(params)),
                        **{f"u{u}_{k}": v for u, d in data.items() for k, v in d.items()})


def load_raw(path: Path) -> tuple[dict[int, dict], dict | None]:
    """``save_raw``'s file back: ({unit: {start, end, dev}}, params or None for older files)."""
    data: dict[int, dict] = {}
    params = None
    with np.load(path) as z:
        for name in z.files:
            if name == "params_json":
                params = json.loads(str(z[name]))
                continue
            u, kind = name[1:].split("_")
            data.setdefault(int(u), {})[kind] = z[name]
    return data, params


def _raw_file(folder: Path, config: str) -> Path | None:
    for f in (folder / "raw" / f"{config}.npz", folder / f"{config}.npz"):
        if f.is_file():
            return f
    return None


def join_parts(parts: list[tuple[dict[int, dict], int]]) -> dict[int, dict]:
    """Runs of one configuration as one: each part's warm-up frames dropped, then appended."""
    units = sorted(parts[0][0])
    for data, _ in parts[1:]:
        if sorted(data) != units:
            raise SystemExit(f"parts with different units cannot be joined: {units} and "
                             f"{sorted(data)}")
    return {u: {k: np.concatenate([d[u][k][w:] for d, w in parts])
                for k in ("start", "end", "dev")} for u in units}


def _gpu_ids() -> list[str]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g.strip() for g in visible.split(",") if g.strip()]
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                 timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = [line for line in listing.splitlines() if line.startswith("GPU")]
    return [str(i) for i in range(len(gpus))]


def run_concurrent(args: argparse.Namespace, configs: list[str], workload: Workload, warmup: int,
                   out: Path) -> dict[str, Path]:
    """Every configuration at once in a ``paam eval wait-strategies`` of its own, each with a
    device of its own (cuda: one GPU through CUDA_VISIBLE_DEVICES; cpu: the last core of its
    share) and an equal share of this process's cores; returns their raw files."""
    gpus = _gpu_ids() if args.backend == "cuda" else [""] * len(configs)
    if len(gpus) < len(configs):
        raise SystemExit(f"--concurrent needs a GPU per configuration: {len(configs)} "
                         f"configuration(s), {len(gpus)} GPU(s) found")
    cpus = sorted(os.sched_getaffinity(0))
    share = len(cpus) // len(configs)
    if share < 2:
        raise SystemExit(f"--concurrent: {len(cpus)} core(s) for {len(configs)} "
                         "configuration(s); each needs at least 2")
    if share < args.units + 2:
        print(f"  note: {share} cores per configuration: its {args.units} unit(s) and paamd "
              "share them", flush=True)
    procs = []
    for i, config in enumerate(configs):
        part = out_dir(out / "parts" / config)
        mine = cpus[i * share:(i + 1) * share]
        cmd = [sys.executable, "-m", "paam.cli", "eval", "wait-strategies", "--backend",
               args.backend,
               "--configs", config, "--iterations", str(args.iterations), "--units",
               str(args.units), "--kernel-ms", str(args.kernel_ms), "--period-ms",
               str(workload.period_ms), "--warmup", str(warmup), "--hybrid-spin-us",
               str(args.hybrid_spin_us), "--no-plots", "--out", str(part)]
        log = open(part / "run.log", "w")  # noqa: SIM115 - closed below
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if args.backend == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = gpus[i]
        print(f"  {config}: " + (f"GPU {gpus[i]}, " if gpus[i] else "")
              + f"CPUs {','.join(map(str, mine))}, log {part}/run.log", flush=True)
        procs.append((config, log, subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
            preexec_fn=lambda m=mine: os.sched_setaffinity(0, m))))
    budget = 120 + args.iterations * workload.period_ms / 1e3 * 3
    t0 = time.monotonic()
    next_note = 60.0
    failed = None
    try:
        while failed is None and any(p.poll() is None for _, _, p in procs):
            time.sleep(1.0)
            failed = next((c for c, _, p in procs if p.returncode not in (None, 0)), None)
            elapsed = time.monotonic() - t0
            if elapsed > budget:
                failed = "(time)"
            if elapsed >= next_note:
                next_note += 60.0
                done = sum(p.returncode == 0 for _, _, p in procs)
                print(f"  {elapsed:.0f} s: {done}/{len(procs)} configuration(s) done", flush=True)
    finally:
        for _, log, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
    if failed is not None:
        what = (f"a configuration did not finish within {budget:.0f} s" if failed == "(time)"
                else f"{failed} failed")
        raise SystemExit(f"--concurrent: {what}; logs in {out}/parts/*/run.log")
    return {c: out / "parts" / c / "raw" / f"{c}.npz" for c in configs}


def _warmup(frames: int, given: int | None) -> int:
    """Frames dropped at the start of a run: ``given``, else 1% (at least 20); at most half."""
    return min(given or max(20, frames // 100), frames // 2)


def run(args: argparse.Namespace) -> int:
    if args.quick:
        args.iterations = min(args.iterations, 300)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    bad = [c for c in configs if c not in CONFIGS]
    if bad:
        raise SystemExit(f"unknown configuration(s) {bad}; choose from {', '.join(CONFIGS)}")
    if args.units < 1 or args.iterations < 1:
        raise SystemExit("--units and --iterations must be at least 1")
    if args.from_raw:
        return report_from_raw(args, configs)
    period = args.period_ms or (2 * args.units * args.kernel_ms + 0.5)
    warmup = _warmup(args.iterations, args.warmup)
    workload = Workload(
        frames=args.iterations, units=args.units, kernel_ms=args.kernel_ms, period_ms=period,
        backend=args.backend, hybrid_spin_us=args.hybrid_spin_us,
        device_cpu=device_cpu() if args.backend == "cpu" else -2,
        client_cpus=host_cpus(args.backend))
    out = out_dir(args.out)
    meta = machine_meta(args.backend)
    runs = 1 if args.concurrent else len(configs)
    est = runs * args.iterations * period / 1e3
    print(f"paam eval wait-strategies: {args.units} units x {args.kernel_ms} ms kernel every "
          f"{period:.2f} ms, {args.iterations} frames per configuration"
          + (", configurations at once" if args.concurrent else "") + f" (about {est:.0f} s)\n"
          f"  {machine_line(meta)}"
          + ("" if args.concurrent else f"; units on CPUs {workload.client_cpus}")
          + (f", device core {workload.device_cpu}" if args.backend == "cpu" and not args.concurrent
             else ""), flush=True)

    raw: dict[str, dict] = {}
    if args.concurrent:
        for config, path in run_concurrent(args, configs, workload, warmup, out).items():
            raw[config] = join_parts([(load_raw(path)[0], warmup)])
            os.replace(path, out_dir(out / "raw") / f"{config}.npz")
    else:
        from paam.testing import start_server
        with tempfile.TemporaryDirectory(prefix="paam-eval-") as tmp:
            for i, config in enumerate(configs, 1):
                print(f"[{i}/{len(configs)}] {config} ...", flush=True)
                if config.startswith("paam"):
                    with start_server(buckets=1, backend=args.backend,
                                      device_cpu=workload.device_cpu if args.backend == "cpu"
                                      else None) as srv:
                        data = run_config(config, workload, srv.socket_path, tmp)
                else:
                    data = run_config(config, workload, None, tmp)
                save_raw(out_dir(out / "raw") / f"{config}.npz", data, workload, warmup, meta)
                raw[config] = join_parts([(data, warmup)])
    params = {**dataclasses.asdict(workload), "frames_kept": args.iterations - warmup,
              "warmup": warmup}
    return report(raw, meta, params, out, not args.no_plots)


def report_from_raw(args: argparse.Namespace, configs: list[str]) -> int:
    folders = [Path(d) for d in args.from_raw]
    for d in folders:
        if not d.is_dir():
            raise SystemExit(f"--from-raw: {d} is not a folder")
    raw: dict[str, dict] = {}
    params: dict | None = None
    parts_of: dict[str, int] = {}
    runs: list[dict] = []
    for config in configs:
        parts = []
        for d in folders:
            f = _raw_file(d, config)
            if f is None:
                continue
            data, p = load_raw(f)
            frames = len(next(iter(data.values()))["start"])
            parts.append((data, _warmup(frames, args.warmup or (p or {}).get("warmup"))))
            p = p or {}
            p.setdefault("meta", _summary_meta(f))
            for k in ("units", "kernel_ms", "period_ms"):
                if params and k in p and k in params and p[k] != params[k]:
                    raise SystemExit(f"--from-raw: {f} ran with {k} {p[k]}, an earlier file "
                                     f"with {params[k]}: such runs cannot be joined")
            params = params or p
            runs.append({"config": config, "file": str(f), "frames": frames,
                         "warmup": parts[-1][1], "meta": p.get("meta")})
        if parts:
            raw[config] = join_parts(parts)
            parts_of[config] = len(parts)
    if not raw:
        raise SystemExit(f"--from-raw: no raw file of {', '.join(configs)} in "
                         + ", ".join(map(str, folders)))
    p = params or {"units": args.units, "kernel_ms": args.kernel_ms,
                   "period_ms": args.period_ms or float("nan")}
    kept = {c: len(next(iter(d.values()))["start"]) for c, d in raw.items()}
    frames = (str(min(kept.values())) if len(set(kept.values())) == 1
              else ", ".join(f"{c} {n}" for c, n in kept.items()))
    meta = p.pop("meta", None)
    if meta is None:
        meta = {**machine_meta(p.get("backend", args.backend)),
                "note": "the raw files say nothing of their machine: this is the machine that "
                        "analysed them"}
        print(f"  note: {meta['note']}", flush=True)
    # (each part's warm-up is in "runs"; the joined data has none left to drop)
    cfg = {**p, "frames_kept": frames, "warmup": 0, "parts": parts_of, "runs": runs}
    print("paam eval wait-strategies --from-raw: "
          + ", ".join(f"{c} ({parts_of[c]} part(s), {kept[c]} frames)" for c in raw), flush=True)
    return report(raw, meta, cfg, out_dir(args.out), not args.no_plots, wrote_raw=False)


def _summary_meta(raw_file: Path) -> dict | None:
    """Where a raw file without its own metadata was measured: the summary.json of its run
    (beside it, or above its raw/ folder), if there is one."""
    for d in (raw_file.parent, raw_file.parent.parent):
        f = d / "summary.json"
        if f.is_file():
            try:
                return json.loads(f.read_text()).get("meta")
            except (OSError, ValueError):
                return None
    return None


def report(raw: dict[str, dict], meta: dict, cfg: dict, out: Path, plots: bool,
           wrote_raw: bool = True) -> int:
    """Summary files, table and figures of ``raw`` (warm-up frames already dropped)."""
    files = ["summary.csv", "summary.json", "summary.txt"]
    results = {config: analyse(data) for config, data in raw.items()}
    rows = []
    for config, r in results.items():
        for scope in ("request", "frame"):
            s = r[scope]
            rows.append({"config": config, "scope": scope, "n": s["n"], "met_us": s["mean"],
                         "mmet_us": s["max"], "min_us": s["min"], "avg_jitter_us": s["avg_jitter"],
                         "p2v_us": s["p2v"], "p50_us": s["p50"], "p99_us": s["p99"],
                         "p999_us": s["p999"]})
    write_csv(out / "summary.csv", rows)
    write_json(out / "summary.json", {"meta": meta, "params": cfg,
                                      "results": results})
    text = render(results, meta, cfg)
    (out / "summary.txt").write_text(text)
    print("\n" + text)
    note = ""
    if plots:
        try:
            plot_histograms(raw, out / "histograms.png", cfg)
            plot_profiles(raw, out / "profiles.png", cfg)
            files += ["histograms.png", "profiles.png"]
        except Exception as exc:  # noqa: BLE001 - the table is the main output
            note = f" (no plots: {exc})"
    print(f"wrote {out}/" + ", ".join(files + ["raw/"] * wrote_raw) + note)
    return 0


def render(results: dict, meta: dict, cfg: dict) -> str:
    joined = ", ".join(f"{c}: {n} runs joined" for c, n in cfg.get("parts", {}).items() if n > 1)
    joined = f" ({joined})" if joined else ""
    head = [f"Wait strategies: {cfg['units']} units, {cfg['kernel_ms']} ms kernel, period "
            f"{cfg['period_ms']:.2f} ms, {cfg['frames_kept']} frames after warm-up{joined}",
            f"{machine_line(meta)}", ""]
    rows = [["configuration", "MET us", "MMET us", "min us", "avg jitter", "P2V us", "p99 us",
             "frame MET", "frame MMET", "kernel us"]]
    for config, r in results.items():
        q, f, d = r["request"], r["frame"], r["device"]
        rows.append([config, fmt(q["mean"]), fmt(q["max"]), fmt(q["min"]),
                     fmt(q["avg_jitter"]), fmt(q["p2v"]), fmt(q["p99"]),
                     fmt(f["mean"]), fmt(f["max"]), fmt(d["mean"])])
    notes = ["", "per request: submit to result in the unit; frame: first submit to last result;",
             "avg jitter = mean |t - MET|; P2V = MMET - min; kernel = device time the backend "
             "measured (mean)"]
    return "\n".join(head) + table(rows, right=range(1, 10)) + "\n" + "\n".join(notes) + "\n"


def _exec_us(data: dict) -> list[np.ndarray]:
    return [(data[u]["end"] - data[u]["start"]) / 1e3 for u in sorted(data)]


def plot_histograms(raw: dict, path: Path, cfg: dict) -> None:
    plt = pyplot()
    n = len(raw)
    fig, axes = plt.subplots(n, 1, figsize=(7, 1.7 * n + 0.6), sharex=True, squeeze=False)
    allv = np.concatenate([np.concatenate(_exec_us(d)) for d in raw.values()])
    hi = float(np.percentile(allv, 99.9)) * 1.3
    lo = float(allv.min()) * 0.9
    bins = np.linspace(lo, hi, 120)
    for ax, (config, data) in zip(axes[:, 0], raw.items()):
        v = np.concatenate(_exec_us(data))
        ax.hist(np.clip(v, lo, hi), bins=bins, color="#4c9be8" if config.startswith("paam")
                else "#e8a04c")
        ax.set_yscale("log")
        ax.axvline(v.mean(), color="k", lw=0.8)
        ax.set_ylabel("count")
        ax.text(0.99, 0.85, f"{config}: MET {v.mean():.0f} µs, MMET {v.max():.0f} µs",
                transform=ax.transAxes, ha="right", fontsize=8)
    axes[-1, 0].set_xlabel(f"request execution time (µs), kernel {cfg['kernel_ms'] * 1e3:.0f} µs; "
                           "last bin holds everything beyond")
    fig.suptitle("Wait strategies: histograms of the per-request execution time", fontsize=10)
    save(fig, path)


def plot_profiles(raw: dict, path: Path, cfg: dict) -> None:
    plt = pyplot()
    n = len(raw)
    fig, axes = plt.subplots(n, 1, figsize=(7, 1.7 * n + 0.6), sharex=True, squeeze=False)
    for ax, (config, data) in zip(axes[:, 0], raw.items()):
        for u, v in enumerate(_exec_us(data)):
            ax.plot(np.arange(v.size), v, ".", ms=1.5, alpha=0.6, rasterized=True,
                    label=f"unit {u}")
        ax.set_yscale("log")
        ax.set_ylabel("µs")
        ax.text(0.99, 0.85, config, transform=ax.transAxes, ha="right", fontsize=8)
    axes[-1, 0].set_xlabel("iteration")
    fig.suptitle("Wait strategies: execution profiles (every request in order)", fontsize=10)
    save(fig, path, dpi=80)  # rasterized dots: keeps the PNG small
