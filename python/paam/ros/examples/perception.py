"""Perception through paamd: a camera, a detector on the critical chain, and a best-effort model.

``paam ros-example perception --duration 10`` (or ``python -m paam.ros.examples.perception``):

1. makes two models with random weights (:mod:`paam.model_zoo`; nothing is downloaded): the
   detector (ResNet-18) and a heavier best-effort model (ResNet-50), from torchvision where
   Python has it, else written in torch.nn, else, without Python torch, smaller convolutional
   networks in their place from ``paam_make_test_model``;
2. starts paamd on the CPU backend (``--backend``) with two buckets serving both models;
3. runs a camera node publishing ``sensor_msgs/Image`` and a detector node that runs the detector
   on every frame at the critical chain's priority, both on one PicasExecutor;
4. after half the duration starts a best-effort node in another process, which runs the heavy
   model back to back at the lowest priority;
5. prints the detector's latency (the infer call, and from the frame's capture to the result)
   without and with that load: p50, p99 and max.

``--socket`` uses a running paamd that serves ``detector`` and ``heavy`` instead of starting one.
The nodes are in :mod:`paam.ros.examples.perception_nodes`.
"""
from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

PHASES = ("alone", "with best-effort load")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--duration", type=float, default=10.0,
                   help="seconds of measurement, half without and half with the best-effort node (default 10)")
    p.add_argument("--rate", type=float, default=15.0, help="camera frames per second (default 15)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"], help="paamd's backend (default cpu)")
    p.add_argument("--socket", default=None,
                   help="use the paamd at this socket (it must serve 'detector' and 'heavy') instead of starting one")
    p.add_argument("--models-dir", type=Path, default=None,
                   help="where the models are made, or reused if its models.json is there "
                        "(default: a temporary folder)")
    p.add_argument("--source", default="auto", choices=["auto", "torchvision", "torch", "tool"],
                   help="where the networks come from (paam.model_zoo; default auto)")
    p.add_argument("--image", type=int, default=128, help="image side of the torch models (default 128)")
    p.add_argument("--heavy-batch", type=int, default=4, help="images per best-effort request (default 4)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures to this JSON file")
    p.set_defaults(func=_entry)


def _entry(args: argparse.Namespace) -> int:
    from paam.ros.examples import _missing_ros
    missing = _missing_ros()
    if missing is not None:
        return missing
    for name, value, low in (("--duration", args.duration, 1.0), ("--rate", args.rate, 0.5),
                             ("--image", args.image, 32), ("--heavy-batch", args.heavy_batch, 1)):
        if value < low:
            print(f"paam ros-example perception: {name} must be at least {low:g}, got {value:g}", file=sys.stderr)
            return 2
    from paam.errors import PaamError
    try:
        return run(args)
    except (RuntimeError, PaamError) as exc:
        print(f"paam ros-example perception: {exc}", file=sys.stderr)
        return 1


def summarize(values: Sequence[float]) -> dict[str, float]:
    """count, p50, p99 and max of a latency series (ms)."""
    if not values:
        return {"count": 0}
    a = np.asarray(values, dtype=np.float64)
    return {"count": int(a.size), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
            "max": float(a.max())}


def format_report(result: dict[str, Any]) -> str:
    lines = [f"detector: {result['detector']}", f"best-effort: {result['heavy']}",
             f"paamd: {result['paamd']}; camera {result['rate_hz']:g} Hz", "",
             f"{'':24s} {'frames':>6s}   {'infer (ms)':^23s}   {'frame -> result (ms)':^23s}",
             f"{'':24s} {'':6s}   {'p50':>7s} {'p99':>7s} {'max':>7s}   {'p50':>7s} {'p99':>7s} {'max':>7s}"]
    for phase in PHASES:
        r = result["phases"][phase]
        i, f = r["infer_ms"], r["frame_ms"]
        if not i.get("count"):
            lines.append(f"{phase:24s} {0:6d}   (no frames)")
            continue
        lines.append(f"{phase:24s} {i['count']:6d}   {i['p50']:7.2f} {i['p99']:7.2f} {i['max']:7.2f}   "
                     f"{f['p50']:7.2f} {f['p99']:7.2f} {f['max']:7.2f}")
    b = result["background"]
    lines.append(f"\nbest-effort node: {b['runs']} runs of batch {b['batch']} "
                 f"({b['runs_per_s']:.1f}/s) while it ran")
    return "\n".join(lines)


def _models(args: argparse.Namespace, tmp: str) -> list:
    from paam import model_zoo
    out = args.models_dir or Path(tmp) / "models"
    if (out / "models.json").exists():
        made = model_zoo.read_manifest(out)
        print(f"models from {out / 'models.json'}", flush=True)
        return made
    print(f"making the models in {out} (random weights, nothing is downloaded) ...", flush=True)
    return model_zoo.make_models(out, {"detector": "resnet18", "heavy": "resnet50"}, source=args.source,
                                 image=args.image, max_batch=max(4, args.heavy_batch))


def _start_background(socket: str, batch: int) -> subprocess.Popen:
    """The best-effort node, in a process of its own (as it would be on a robot)."""
    return subprocess.Popen([sys.executable, "-m", "paam.ros.examples.perception", "--role", "background",
                             "--socket", socket, "--heavy-batch", str(batch)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _wait_line(proc: subprocess.Popen, prefix: str, timeout_sec: float, seen: list[str]) -> str:
    """Reads ``proc``'s output (kept in ``seen``) until a line starting with ``prefix``."""
    result: list[str] = []

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            seen.append(line)
            if line.startswith(prefix):
                result.append(line)
                return
    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout_sec)
    if not result:
        raise RuntimeError(f"the best-effort node did not say '{prefix}' within {timeout_sec:.0f} s:\n"
                           + "".join(seen[-20:]))
    return result[0]


def run(args: argparse.Namespace) -> int:
    import rclpy

    from paam.models import query_models
    from paam.ros import PicasExecutor
    from paam.ros.examples.perception_nodes import Camera, Detector, perception_chain
    from paam.testing import start_server

    with tempfile.TemporaryDirectory(prefix="paam-perception-") as tmp:
        server = None
        if args.socket is None:
            made = _models(args, tmp)
            serve = [a for m in made for a in ("--model", m.serve_arg())]
            print(f"starting paamd ({args.backend} backend, 2 buckets) with {', '.join(m.name for m in made)} ...",
                  flush=True)
            server = start_server(backend=args.backend, buckets=2, extra_args=serve, timeout_sec=120)
            socket = server.socket_path
            described = {m.name: m.description for m in made}
        else:
            socket = args.socket
            described = {}
        try:
            infos = {m.name: m for m in query_models(socket)}
            missing = [n for n in ("detector", "heavy") if n not in infos]
            if missing:
                print(f"paam ros-example perception: the paamd at {socket} does not serve {', '.join(missing)} "
                      f"(it serves: {', '.join(infos) or 'no models'})", file=sys.stderr)
                return 2
            det = infos["detector"]
            side, dtype = det.inputs[0].shape[-1], det.inputs[0].dtype
            phase = {"name": None}
            samples: dict[str, dict[str, list[float]]] = {p: {"infer_ms": [], "frame_ms": []} for p in PHASES}

            def on_result(infer_ms: float, frame_ms: float, _top: int) -> None:
                if phase["name"] is not None:
                    samples[phase["name"]]["infer_ms"].append(infer_ms)
                    samples[phase["name"]]["frame_ms"].append(frame_ms)

            rclpy.init()
            chain = perception_chain(args.rate)
            executor = PicasExecutor()
            camera = Camera(side, args.rate)
            client = chain.client("detect", timing=False, socket=socket, models=["detector"])
            detector = Detector(client, "detector", dtype, on_result)
            chain.bind("camera", camera.timer)
            chain.bind("detect", detector.subscription)
            for node in (camera, detector):
                executor.add_node(node)
            chain.configure_executor(executor)
            spinner = threading.Thread(target=executor.spin_rt, daemon=True)
            spinner.start()
            background = None
            seen: list[str] = []
            try:
                time.sleep(1.0)  # the first frames warm up the model and the transport
                print(f"phase 1/2: the detector alone ({args.duration / 2:g} s)", flush=True)
                phase["name"] = PHASES[0]
                time.sleep(args.duration / 2)
                phase["name"] = None
                print("phase 2/2: starting the best-effort node ...", flush=True)
                background = _start_background(socket, args.heavy_batch)
                _wait_line(background, "background ready", 120, seen)
                print(f"phase 2/2: with the best-effort node running the heavy model ({args.duration / 2:g} s)",
                      flush=True)
                phase["name"] = PHASES[1]
                time.sleep(args.duration / 2)
                phase["name"] = None
                background.send_signal(signal.SIGINT)
                done = _wait_line(background, "background runs", 30, seen)
                runs, secs = int(done.split()[2]), float(done.split()[4])
            finally:
                if background is not None and background.poll() is None:
                    background.kill()
                    background.wait()
                executor.shutdown(timeout_sec=5)
                spinner.join(timeout=5)
                for node in (camera, detector):
                    node.destroy_node()
                client.close()
                rclpy.try_shutdown()
            result = {
                "detector": described.get("detector", f"{det.inputs[0]}"),
                "heavy": described.get("heavy", f"{infos['heavy'].inputs[0]}"),
                "paamd": f"{args.backend} backend, 2 buckets" if server is not None else f"at {socket}",
                "rate_hz": args.rate,
                "phases": {p: {k: summarize(v) for k, v in samples[p].items()} for p in PHASES},
                "background": {"runs": runs, "seconds": secs, "batch": args.heavy_batch,
                               "runs_per_s": runs / secs if secs > 0 else 0.0},
            }
        finally:
            if server is not None:
                server.stop()
    print()
    print(format_report(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1))
        print(f"wrote {args.json}")
    return 0


def run_background(socket: str, batch: int) -> int:
    """The best-effort node's process: runs until SIGINT/SIGTERM, then prints its count."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    from paam.models import query_models
    from paam.ros import PicasExecutor
    from paam.ros.examples.perception_nodes import Background, background_chain

    info = {m.name: m for m in query_models(socket)}["heavy"]
    spec = info.inputs[0]
    images = np.random.default_rng(0).random([batch] + spec.shape[1:]).astype(spec.dtype)
    rclpy.init()
    chain = background_chain()
    client = chain.client("heavy", timing=False, socket=socket, models=["heavy"])
    client.infer("heavy", images=images)  # loaded and warm before the measurement starts
    node = Background(client, "heavy", images)
    executor = PicasExecutor()
    executor.add_node(node)
    chain.bind("heavy", node.timer)
    chain.configure_executor(executor)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    spinner = threading.Thread(target=executor.spin_rt, daemon=True)
    t0 = time.monotonic()
    spinner.start()
    print("background ready", flush=True)
    try:
        stop.wait()
    except ExternalShutdownException:
        pass
    secs = time.monotonic() - t0
    executor.shutdown(timeout_sec=10)
    spinner.join(timeout=10)
    print(f"background runs {node.runs} in {secs:.3f} s", flush=True)
    node.destroy_node()
    client.close()
    rclpy.try_shutdown()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m paam.ros.examples.perception", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    p.add_argument("--role", default="all", choices=["all", "background"],
                   help="all: the whole example; background: only the best-effort node (needs --socket)")
    args = p.parse_args(argv)
    if args.role == "background":
        if args.socket is None:
            p.error("--role background needs --socket")
        return run_background(args.socket, args.heavy_batch)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
