"""``paam bench models``: what runs the models, in processes the bench starts (spawned: no CUDA
context is inherited) and threads inside them.

A **host** process runs, each on a thread, any of: one high-priority (HP) runner that measures
on request (a fixed rate for a number of seconds), and low-priority (LP) runners that run back
to back while their ``active`` event is set and count the batches they complete. A runner's
engine is ``paam`` (a :class:`paam.Client` of a paamd that serves the model) or ``torch`` (the
same TorchScript file loaded with ``torch.jit.load`` and run in this process, on a CUDA stream
of a given priority). The methods differ only in how runners are spread over hosts
(:mod:`paam.bench.models`): direct and MPS, one runner per process; in-process, all of them in
one; paam, one per process, all as clients of one paamd.

A torch request copies its input from pinned host memory to the device, runs the model and
copies the output back on the runner's stream, then waits for the stream: the work paamd's
CUDA backend does for a model request (its input comes through the client's region).
"""
from __future__ import annotations

import contextlib
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass
class Spec:
    """One runner (picklable: it crosses into the spawned host)."""
    engine: str                 # paam | torch
    batch: int
    shape: list[int]            # the input's shape without the batch
    dtype: str                  # the input's dtype (the signature's)
    input_name: str = "images"
    path: str = ""              # torch: the TorchScript file
    device: str = "cuda"        # torch: cuda | cpu
    stream_priority: int | None = None   # torch on CUDA: None is the default priority (0)
    model: str = ""             # paam: the model's name at paamd
    socket: str = ""            # paam: paamd's socket
    priority: int = 0           # paam: chain priority
    wait: str = "suspend"       # paam: how the client waits
    warmup: int = 5


class Runner:
    """``once()`` runs one request; ``device_ms()`` the device time of the last one where
    known (paam: paamd's device start to end)."""

    def __init__(self, once: Callable[[], None], close: Callable[[], None],
                 device_ms: Callable[[], float | None] = lambda: None, info: str = ""):
        self.once, self.close, self.device_ms, self.info = once, close, device_ms, info


def torch_runner(spec: Spec) -> Runner:
    import torch
    dev = torch.device(spec.device)
    cuda = dev.type == "cuda"
    torch.backends.cudnn.benchmark = False   # as libtorch in paamd: the same kernels everywhere
    if not cuda:
        torch.set_num_threads(1)             # as paamd's --model-threads default
    model = torch.jit.load(spec.path, map_location=dev).eval()
    dtype = getattr(torch, spec.dtype)
    host_x = torch.rand([spec.batch] + list(spec.shape)).to(dtype)
    if cuda:
        host_x = host_x.pin_memory()
    dev_x = host_x.to(dev)
    stream = (torch.cuda.Stream(device=dev, priority=spec.stream_priority or 0) if cuda else None)
    out: list[Any] = []

    def once() -> None:
        ctx = torch.cuda.stream(stream) if cuda else contextlib.nullcontext()
        with torch.inference_mode(), ctx:
            dev_x.copy_(host_x, non_blocking=True)
            y = model(dev_x)
            y = y[0] if isinstance(y, (tuple, list)) else y
            if not out:
                out.append(torch.empty(y.shape, dtype=y.dtype, pin_memory=cuda))
            out[0].copy_(y, non_blocking=True)
        if cuda:
            stream.synchronize()

    for _ in range(spec.warmup):
        once()
    prio = f", stream priority {spec.stream_priority}" if cuda and spec.stream_priority is not None else ""
    return Runner(once, lambda: None, info=f"torch {torch.__version__} on {dev}{prio}")


def paam_runner(spec: Spec, hp: bool) -> Runner:
    import paam
    from paam.tensors import pack
    c = paam.Client(priority=spec.priority, models=[spec.model], wait=spec.wait, socket=spec.socket)
    x = np.random.default_rng(1).random([spec.batch] + list(spec.shape)).astype(spec.dtype)
    if hp:
        def once() -> None:
            c.infer(spec.model, **{spec.input_name: x})
    else:  # the batch written once into the region, sent again and again (no packing per request)
        n = pack(c.input_buffer(spec.model), spec.model, {spec.input_name: x})

        def once() -> None:
            c.request_raw(spec.model, n)

    def device_ms() -> float | None:
        ts = c.timestamps(spec.model)
        return (ts["device_end"] - ts["device_start"]) / 1e6 if ts.get("device_end") else None

    for _ in range(spec.warmup):
        once()
    return Runner(once, c.close, device_ms, info=f"paam client priority {spec.priority}, bucket {c.bucket}")


def make_runner(spec: Spec, hp: bool) -> Runner:
    if spec.engine == "torch":
        return torch_runner(spec)
    if spec.engine == "paam":
        return paam_runner(spec, hp)
    raise ValueError(f"unknown engine {spec.engine!r}")


def hp_loop(r: Runner, seconds: float, hz: float) -> tuple[list[float], list[float]]:
    """Requests at a fixed rate (a late one starts at once: no request is skipped) for
    ``seconds``; each one's latency and, where known, its device time (ms)."""
    lat, dev = [], []
    period = 1.0 / hz
    t_next = time.perf_counter()
    end = t_next + seconds
    while t_next < end:
        now = time.perf_counter()
        if now < t_next:
            time.sleep(t_next - now)
        t0 = time.perf_counter_ns()
        r.once()
        lat.append((time.perf_counter_ns() - t0) / 1e6)
        d = r.device_ms()
        if d is not None:
            dev.append(d)
        t_next += period
    return lat, dev


def _lp_loop(r: Runner, index: int, active: Any, stop: Any, counters: Any, res: Any, host_id: int) -> None:
    try:
        while not stop.is_set():
            if not active.wait(0.05):
                continue
            r.once()
            counters[index] += 1   # only this thread writes this slot
    except Exception:  # noqa: BLE001 - reported to the bench, which names the runner
        res.put(("error", host_id, f"LP runner {index}: {traceback.format_exc()}"))


def host(host_id: int, hp: Spec | None, lps: list[tuple[int, Spec]], cmd: Any, res: Any, active: list,
         stop: Any, counters: Any) -> None:
    """A host process (module docstring). Says ("ready", id, info) once every runner is warm,
    answers ("hp", seconds, hz) with ("hp", id, latencies, device times), ends on ``stop``."""
    runners: list[Runner] = []
    try:
        hp_runner = make_runner(hp, True) if hp is not None else None
        if hp_runner is not None:
            runners.append(hp_runner)
        threads = []
        for index, spec in lps:
            r = make_runner(spec, False)
            runners.append(r)
            threads.append(threading.Thread(target=_lp_loop, args=(r, index, active[index], stop, counters, res,
                                                                     host_id), daemon=True))
        for t in threads:
            t.start()
        res.put(("ready", host_id, "; ".join(sorted({r.info for r in runners}))))
        while not stop.is_set():
            if hp_runner is None:
                stop.wait(0.2)
                continue
            try:
                msg = cmd.get(timeout=0.2)
            except Exception:  # noqa: BLE001 - queue.Empty: look at stop again
                continue
            if msg[0] == "hp":
                lat, dev = hp_loop(hp_runner, msg[1], msg[2])
                res.put(("hp", host_id, lat, dev))
        for t in threads:
            t.join(timeout=30)
    except Exception:  # noqa: BLE001 - reported to the bench
        res.put(("error", host_id, traceback.format_exc()))
    finally:
        for r in runners:
            with contextlib.suppress(Exception):
                r.close()


def profile_kernels(path: str, batch: int, shape: list[int], dtype: str, res: Any) -> None:
    """The CUDA kernels of one run of the model (torch profiler): how many, and how long each
    takes (µs). With block-level priority an HP kernel waits for the LP blocks in flight, so
    the LP model's kernel lengths bound what stream priorities alone can give."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
        dev = torch.device("cuda")
        model = torch.jit.load(path, map_location=dev).eval()
        x = torch.rand([batch] + list(shape), device=dev).to(getattr(torch, dtype))
        with torch.inference_mode():
            for _ in range(3):
                model(x)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                model(x)
                torch.cuda.synchronize()
        durations = []
        for e in prof.events():
            if "cuda" not in str(getattr(e, "device_type", "")).lower():
                continue
            if e.name.lower().startswith(("memcpy", "memset")):
                continue
            t = getattr(e, "device_time", 0.0) or getattr(e, "cuda_time", 0.0) or e.time_range.elapsed_us()
            durations.append(float(t))
        a = np.asarray(durations)
        out = {"batch": batch, "kernels": int(a.size)}
        if a.size:
            out |= {"total_us": float(a.sum()), "p50_us": float(np.percentile(a, 50)),
                    "p90_us": float(np.percentile(a, 90)), "max_us": float(a.max()),
                    "over_100_us": int((a > 100).sum())}
        res.put(("kernels", out))
    except Exception as exc:  # noqa: BLE001 - a note in the report, not a failed bench
        res.put(("kernels", {"error": f"{type(exc).__name__}: {exc}"}))
