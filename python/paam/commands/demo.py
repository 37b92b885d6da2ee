"""``paam demo``: what priority-driven accelerator access buys, in about a minute.

Five client processes of different chain priorities share one "accelerator" (one CPU core on
the default CPU backend, a GPU with ``--backend cuda``): three periodic chains and two
best-effort processes that keep the device busy. The same workload runs twice:

* through paamd (``paam``): requests are queued by chain priority in buckets; the buckets map
  onto the device's priority levels, so the critical chain waits for little;
* by direct invocation (``direct``): every process runs its kernels itself and the OS (or GPU
  driver) time-slices them with no notion of chain priority.

It prints the response time (p50, p99, max) of every chain under both, and writes the raw data
and a plot into the results folder.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from paam import figures


@dataclass(frozen=True)
class DemoChain:
    name: str
    priority: int
    period_ms: float      # 0: back to back (best-effort load)
    kernel_ms: float


CHAINS = [
    DemoChain("critical", 30, 40.0, 4.0),
    DemoChain("control", 20, 50.0, 6.0),
    DemoChain("planning", 10, 80.0, 8.0),
    DemoChain("best-effort-1", 1, 0.0, 10.0),
    DemoChain("best-effort-2", 1, 0.0, 10.0),
]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="contention demo: paamd versus direct invocation",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=12.0, help="seconds per mode (default 12)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"], help="device backend (default cpu)")
    p.add_argument("--buckets", type=int, default=4,
                   help="paamd buckets (default 4: one per distinct priority of the demo)")
    p.add_argument("--no-rt", dest="rt", action="store_false",
                   help="cpu backend: do not ask for SCHED_FIFO bucket threads (the default asks, and "
                        "paamd falls back to a nice ladder where the OS denies it)")
    p.add_argument("--wait", default="suspend", choices=["spin", "suspend", "hybrid"])
    p.add_argument("--out", default="results/demo", help="folder for demo.json and demo.png")
    p.set_defaults(func=run)


def _device_cpu() -> int:
    return (os.cpu_count() or 1) - 1


def _client_main(chain: DemoChain, mode: str, socket: str | None, wait: str, backend: str,
                 start_at: float, end_at: float, queue: mp.Queue) -> None:
    import paam
    ncpu = os.cpu_count() or 1
    if ncpu > 1:  # keep the device core for the device
        os.sched_setaffinity(0, set(range(ncpu - 1)))
    latencies: list[float] = []
    try:
        with paam.Client(priority=chain.priority, kernels=["spin"], wait=wait, socket=socket,
                         name=chain.name, direct=(mode == "direct"), direct_backend=backend,
                         device_cpu=_device_cpu()) as c:
            while time.monotonic() < start_at:
                time.sleep(0.001)
            release = start_at
            while True:
                now = time.monotonic()
                if now >= end_at:
                    break
                if chain.period_ms > 0 and now < release:
                    time.sleep(release - now)
                t0 = time.monotonic()
                c.request("spin", duration_ms=chain.kernel_ms)
                latencies.append((time.monotonic() - (release if chain.period_ms > 0 else t0)) * 1e3)
                release += chain.period_ms / 1e3
                if chain.period_ms > 0 and release < time.monotonic():
                    release = time.monotonic()  # overrun: next job released at once
        queue.put((chain.name, latencies, None))
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        queue.put((chain.name, latencies, f"{type(exc).__name__}: {exc}"))


def _run_mode(mode: str, args: argparse.Namespace, socket: str | None) -> dict[str, list[float]]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    start_at = time.monotonic() + 2.0  # time for every process to start and register
    end_at = start_at + args.duration
    procs = [ctx.Process(target=_client_main,
                         args=(ch, mode, socket, args.wait, args.backend, start_at, end_at, queue))
             for ch in CHAINS]
    for p in procs:
        p.start()
    results: dict[str, list[float]] = {}
    errors = []
    for _ in procs:
        name, lat, err = queue.get(timeout=args.duration + 60)
        results[name] = lat
        if err:
            errors.append(f"{name}: {err}")
    for p in procs:
        p.join(10)
    if errors:
        raise SystemExit(f"demo ({mode}) failed:\n  " + "\n  ".join(errors))
    return results


def _expected_seconds(duration: float) -> float:
    """Roughly how long ``paam demo`` takes: per mode, the clients' start (the 2 s that
    _run_mode gives them) and the run; paamd's start, the joins and the plot add a few seconds
    (35 s for the default 12 s on a 2-core VM)."""
    return 2 * (duration + 2.0) + 5.0


def _stats(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return (float("nan"),) * 3
    a = np.asarray(values)
    return float(np.percentile(a, 50)), float(np.percentile(a, 99)), float(a.max())


def _change(paam_ms: float, direct_ms: float) -> float:
    """paamd's figure against direct invocation's, in percent (NaN without a direct figure)."""
    return (paam_ms - direct_ms) / direct_ms * 100 if direct_ms == direct_ms and direct_ms > 0 \
        else float("nan")


def _pct(value: float) -> str:
    return "n/a" if value != value else f"{round(value):+d}%".replace("+0%", "0%")


def run(args: argparse.Namespace) -> int:
    from ..testing import start_server
    print(f"paam demo: {len(CHAINS)} client processes share one {args.backend} device "
          f"(core {_device_cpu()} plays the device)" if args.backend == "cpu" else
          f"paam demo: {len(CHAINS)} client processes share one GPU")
    print(f"two runs of {args.duration:g} s (through paamd, then direct invocation): about "
          f"{_expected_seconds(args.duration):.0f} s in all")
    for ch in CHAINS:
        kind = f"every {ch.period_ms:.0f} ms" if ch.period_ms else "back to back"
        print(f"  {ch.name:<14} priority {ch.priority:>2}  {ch.kernel_ms:.0f} ms kernel {kind}")

    print(f"\n[1/2] through paamd ({args.buckets} buckets), {args.duration:.0f} s ...", flush=True)
    rt = ["--rt"] if args.rt and args.backend == "cpu" else []
    with start_server(buckets=args.buckets, backend=args.backend, device_cpu=_device_cpu(), extra_args=rt) as srv:
        served = _run_mode("paam", args, srv.socket_path)
        notes = [line for line in srv.log().splitlines() if "denied" in line or "cannot" in line]
    for line in notes[:2]:
        print(f"  note: {line}")
    print(f"[2/2] direct invocation, {args.duration:.0f} s ...", flush=True)
    direct = _run_mode("direct", args, None)

    rows = []
    header = (f"{'chain':<14} {'prio':>4} {'kernel':>7} | {'paam p50':>9} {'p99':>8} {'max':>8} "
              f"| {'direct p50':>10} {'p99':>8} {'max':>8} | {'p99 change':>10} {'max change':>10}")
    print("\nresponse time per request (ms), release to result:\n" + header + "\n" + "-" * len(header))
    for ch in CHAINS:
        s, d = _stats(served[ch.name]), _stats(direct[ch.name])
        change = [_change(s[i], d[i]) for i in (1, 2)]
        rows.append({"chain": ch.name, "priority": ch.priority, "kernel_ms": ch.kernel_ms,
                     "period_ms": ch.period_ms, "paam": dict(zip(("p50", "p99", "max"), s)),
                     "direct": dict(zip(("p50", "p99", "max"), d)),
                     "change_pct": {"p99": change[0], "max": change[1]},
                     "samples": {"paam": len(served[ch.name]), "direct": len(direct[ch.name])}})
        print(f"{ch.name:<14} {ch.priority:>4} {ch.kernel_ms:>5.0f}ms | {s[0]:>9.2f} {s[1]:>8.2f} {s[2]:>8.2f} "
              f"| {d[0]:>10.2f} {d[1]:>8.2f} {d[2]:>8.2f} | {_pct(change[0]):>10} {_pct(change[1]):>10}")
    print("\nWith paamd the critical chain waits at most for one lower-priority kernel of its bucket;\n"
          "under direct invocation it shares the device with everyone, whatever its priority.\n"
          "On a VM a single host stall can set a maximum; the p99 is the steadier comparison.")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "demo.json").write_text(json.dumps(
        {"backend": args.backend, "buckets": args.buckets, "rt": bool(rt), "wait": args.wait,
         "duration_s": args.duration,
         "rows": rows, "raw_ms": {"paam": served, "direct": direct}}, indent=1))
    try:
        _plot(served, direct, out / "demo.png")
        print(f"\nwrote {out / 'demo.json'} and {out / 'demo.png'}")
    except Exception as exc:  # noqa: BLE001 - the table is the main output
        print(f"\nwrote {out / 'demo.json'} (no plot: {exc})", file=sys.stderr)
    return 0


def _plot(served: dict, direct: dict, path: Path) -> None:
    plt = figures.pyplot()
    names = [c.name for c in CHAINS]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    pos = np.arange(len(names))
    ax.boxplot([served[n] for n in names], positions=pos - 0.2, widths=0.35, whis=(0, 100),
               patch_artist=True, boxprops={"facecolor": "#4c9be8"})
    ax.boxplot([direct[n] for n in names], positions=pos + 0.2, widths=0.35, whis=(0, 100),
               patch_artist=True, boxprops={"facecolor": "#e8a04c"})
    ax.set_xticks(pos, [f"{c.name}\n(prio {c.priority})" for c in CHAINS])
    ax.set_ylabel("response time (ms), whiskers = min/max")
    ax.set_yscale("log")
    ax.legend([plt.Rectangle((0, 0), 1, 1, fc="#4c9be8"), plt.Rectangle((0, 0), 1, 1, fc="#e8a04c")],
              ["paam (priority-driven)", "direct invocation"])
    ax.set_title("paam demo: one shared device, five processes")
    figures.save(fig, path, dpi=120)
