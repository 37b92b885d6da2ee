"""``paam bench models``: a high-priority (HP) model at batch 1 and a fixed rate, standalone and
beside 1, 2, 4 low-priority (LP) processes that keep the GPU busy with a heavy model at a large
batch; the HP latency (p50, p99, max, p99 against standalone) and the LP throughput (against
one LP process alone), for each way of sharing the GPU:

``paam``         one paamd (``--backend cuda --buckets 2``) serves both models; the HP client
                 has the top chain priority, the LP clients the lowest (their bucket runs
                 ``--be-lanes`` lanes, 4 by default): priority streams in one context.
``paam-preempt`` the same with ``--gpu-preempt`` (docs/gpu.md, "Preemption in slices"): an LP
                 request waits before it starts while the HP bucket has work, running or
                 queued (a model runs as one slice); skipped where paamd has no such flag.
``paam-serial``  the same as ``paam`` with ``--be-lanes 1``: the LP requests one at a time.
``direct``       every process runs the TorchScript file with torch in its own CUDA context:
                 the driver's time-slicing.
``inproc``       the reference: one process, HP on a highest-priority ``torch.cuda.Stream``,
                 each LP on a lowest-priority stream (threads).
``mps``          ``direct`` through an MPS server (``nvidia-cuda-mps-control -d``, private
                 pipe and log folders), where it can be started; skipped, saying why, where not.

Every method runs the same TorchScript files (:mod:`paam.model_zoo`: torchvision's ResNet-50
with random weights by default, fp16, traced and frozen; nothing is downloaded), from pinned
host memory, without CUDA graphs. Runners: :mod:`paam.bench.models_workers`; the figures,
table and summary: :mod:`paam.bench.models_report`. ``--backend cpu`` runs the bench's logic
without a GPU (paamd's CPU backend, small models; the torch methods need Python torch).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from paam.bench import models_report as report
from paam.bench.gpu_report import machine_info, now_iso
from paam.bench.models_workers import Spec, host, profile_kernels
from paam.errors import PaamError

METHODS = ("paam", "paam-preempt", "paam-serial", "direct", "inproc", "mps")
QUICK_METHODS = ("paam", "paam-preempt", "direct", "inproc", "mps")
PAAM_METHODS = {"paam": [], "paam-preempt": ["--gpu-preempt"], "paam-serial": ["--be-lanes", "1"]}
HP_PRIORITY, LP_PRIORITY = 1000, 10          # paam chain priorities
HP_STREAM, LP_STREAM = -5, 0                 # inproc: torch stream priorities (lower is higher)
HP_MODEL, LP_MODEL = "hp_model", "lp_model"  # names at paamd


def register(bench_subparsers: Any) -> None:
    p = bench_subparsers.add_parser(
        "models", help="HP model latency under LP model load: paam vs direct vs in-process vs MPS",
        description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("results/models"), help="results folder (default results/models)")
    p.add_argument("--backend", default="cuda", choices=["cuda", "cpu"],
                   help="cuda (default) or cpu: the bench's logic without a GPU")
    p.add_argument("--methods", nargs="+", default=None, choices=METHODS,
                   help=f"default: all of them ({', '.join(QUICK_METHODS)} with --quick)")
    p.add_argument("--counts", type=int, nargs="+", default=[1, 2, 4], help="LP process counts (default 1 2 4)")
    p.add_argument("--hp-arch", default="resnet50", choices=["resnet18", "resnet50"])
    p.add_argument("--lp-arch", default="resnet50", choices=["resnet18", "resnet50"])
    p.add_argument("--hp-hz", type=float, default=30.0, help="HP request rate (default 30)")
    p.add_argument("--lp-batch", type=int, default=64, help="LP batch (default 64)")
    p.add_argument("--image", type=int, default=224, help="image side (default 224)")
    p.add_argument("--dtype", default="float16", choices=["float16", "float32"],
                   help="model dtype on CUDA (default float16; the CPU backend uses float32)")
    p.add_argument("--source", default="auto", choices=["auto", "torchvision", "torch", "tool"],
                   help="where the networks come from (paam.model_zoo)")
    p.add_argument("--seconds", type=float, default=None, help="HP measurement per point (default 20; --quick 4)")
    p.add_argument("--lp-seconds", type=float, default=None, help="LP alone measurement (default 5; --quick 1.5)")
    p.add_argument("--server-args", default="", help="extra paamd arguments for the paam methods")
    p.add_argument("--quick", action="store_true",
                   help="short windows (4 s per point) and no paam-serial: about 3 minutes on an H100")
    p.set_defaults(func=cmd_models)


def _check(args: argparse.Namespace) -> str | None:
    if args.hp_hz <= 0 or args.hp_hz > 1000:
        return f"--hp-hz must be in (0, 1000], got {args.hp_hz:g}"
    if any(n < 1 or n > 16 for n in args.counts):
        return f"--counts must be between 1 and 16, got {args.counts}"
    if args.lp_batch < 1 or args.lp_batch > 512:
        return f"--lp-batch must be in 1..512, got {args.lp_batch}"
    for name in ("seconds", "lp_seconds"):
        v = getattr(args, name)
        if v is not None and v <= 0:
            return f"--{name.replace('_', '-')} must be positive, got {v:g}"
    return None


def code_commit() -> str:
    env = os.environ.get("PAAM_CODE_COMMIT")
    if env:
        return env
    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                           cwd=Path(__file__).resolve().parent)
        return r.stdout.strip() if r.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _torch_missing() -> str | None:
    import importlib.util
    return None if importlib.util.find_spec("torch") is not None else "Python torch is not installed here"


# ------------------------------------------------------------------------------------------
# one method: hosts started, measured point by point, stopped

class Run:
    """The processes of one method and the primitives that steer them."""

    def __init__(self, name: str, n_lp: int):
        self.name = name
        self.ctx = mp.get_context("spawn")
        self.cmd, self.res = self.ctx.Queue(), self.ctx.Queue()
        self.active = [self.ctx.Event() for _ in range(n_lp)]
        self.stop = self.ctx.Event()
        self.counters = self.ctx.Array("q", n_lp)
        self.procs: list[Any] = []
        self.info: list[str] = []

    def start(self, hp: Spec | None, lps: list[tuple[int, Spec]], env: dict[str, str] | None = None) -> None:
        saved = {k: os.environ.get(k) for k in (env or {})}
        os.environ.update(env or {})
        try:
            p = self.ctx.Process(target=host, args=(len(self.procs), hp, lps, self.cmd, self.res, self.active,
                                                    self.stop, self.counters), daemon=True)
            p.start()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.procs.append(p)

    def _get(self, timeout: float, want: str) -> tuple:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{self.name}: no '{want}' from the runners within {timeout:.0f} s")
            try:
                msg = self.res.get(timeout=min(left, 1.0))
            except queue.Empty:
                dead = [p.pid for p in self.procs if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"{self.name}: runner process(es) {dead} exited") from None
                continue
            if msg[0] == "error":
                raise RuntimeError(f"{self.name}: {msg[2].strip()}")
            if msg[0] == want:
                return msg

    def wait_ready(self, timeout: float) -> None:
        """Until every host is warm; ``timeout`` for all of them together."""
        deadline = time.monotonic() + timeout
        for _ in self.procs:
            self.info.append(self._get(max(1.0, deadline - time.monotonic()), "ready")[2])

    def hp(self, seconds: float, hz: float) -> tuple[list[float], list[float]]:
        self.cmd.put(("hp", seconds, hz))
        msg = self._get(seconds * 3 + 60, "hp")
        return msg[2], msg[3]

    def lp_count(self) -> int:
        return sum(self.counters[:])

    def set_active(self, n: int) -> None:
        for i, e in enumerate(self.active):
            (e.set if i < n else e.clear)()

    def close(self) -> None:
        self.stop.set()
        deadline = time.monotonic() + 15
        for p in self.procs:
            p.join(timeout=max(0.1, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join()


def measure(run: Run, args: argparse.Namespace, lp_batch: int, say: Callable[[str], None]) -> dict[str, Any]:
    """HP alone, one LP alone, then each LP count with the HP measured."""
    ramp, settle = (0.7, 0.4) if args.quick else (1.0, 0.5)
    out: dict[str, Any] = {"points": {}, "runners": run.info}
    lat, dev = run.hp(args.seconds, args.hp_hz)
    out["hp_alone"], out["hp_alone_device"] = lat, dev
    s = report.lat_stats(lat)
    say(f"HP alone: p50 {s['p50']:.2f} p99 {s['p99']:.2f} max {s['max']:.2f} ms ({s['n']} requests)")
    run.set_active(1)
    time.sleep(ramp)
    c0, t0 = run.lp_count(), time.monotonic()
    time.sleep(args.lp_seconds)
    c1, t1 = run.lp_count(), time.monotonic()
    run.set_active(0)
    out["lp_alone_img_s"] = (c1 - c0) * lp_batch / (t1 - t0)
    say(f"LP alone: {out['lp_alone_img_s']:.0f} img/s")
    time.sleep(settle)
    for n in args.counts:
        run.set_active(n)
        time.sleep(ramp)
        c0, t0 = run.lp_count(), time.monotonic()
        lat, dev = run.hp(args.seconds, args.hp_hz)
        c1, t1 = run.lp_count(), time.monotonic()
        run.set_active(0)
        rate = (c1 - c0) * lp_batch / (t1 - t0)
        out["points"][str(n)] = {"hp": lat, "hp_device": dev, "lp_img_s": rate}
        s = report.lat_stats(lat)
        ratio = s["p99"] / report.lat_stats(out["hp_alone"])["p99"]
        say(f"{n} LP: HP p50 {s['p50']:.2f} p99 {s['p99']:.2f} max {s['max']:.2f} ms ({ratio:.2f}x alone), "
            f"LP {rate:.0f} img/s ({100 * rate / max(out['lp_alone_img_s'], 1e-9):.0f}% of alone)")
        time.sleep(settle)
    return out


def _specs(args: argparse.Namespace, models: dict[str, Any], engine: str, socket: str = "") -> tuple[Spec, Spec]:
    def spec(role: str, batch: int, priority: int) -> Spec:
        m = models[role]
        return Spec(engine=engine, batch=batch, shape=m["shape"], dtype=m["dtype"], input_name=m["input"],
                    path=m["path"], device="cuda" if args.backend == "cuda" else "cpu",
                    model=HP_MODEL if role == "hp" else LP_MODEL, socket=socket, priority=priority,
                    wait="spin" if role == "hp" else "suspend", warmup=10 if role == "hp" else 3)
    return spec("hp", 1, HP_PRIORITY), spec("lp", args.lp_batch, LP_PRIORITY)


def run_method(name: str, args: argparse.Namespace, models: dict[str, Any], tmp: Path,
               say: Callable[[str], None]) -> dict[str, Any]:
    n_lp = max(args.counts)
    if name in ("inproc", "mps", "paam-preempt") and args.backend != "cuda":
        return {"skipped": "needs the CUDA backend"}
    if name in ("direct", "inproc", "mps") and _torch_missing():
        return {"skipped": _torch_missing()}
    if name in PAAM_METHODS and any(not paamd_has(flag) for flag in PAAM_METHODS[name] if flag.startswith("--")):
        return {"skipped": f"this paamd has no {' '.join(PAAM_METHODS[name])}"}
    server, mps_stop, env, notes = None, None, None, []
    if name == "mps":
        try:
            env, mps_stop, note = start_mps(tmp / "mps")
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            return {"skipped": f"MPS could not be started here: {exc}"}
        notes.append(note)
    run = Run(name, n_lp)
    try:
        if name in PAAM_METHODS:
            from paam.testing import start_server
            extra = ["--model", f"{HP_MODEL}={models['hp']['path']}", "--model", f"{LP_MODEL}={models['lp']['path']}"]
            extra += args.server_args.split() + PAAM_METHODS[name]
            say(f"starting paamd --backend {args.backend} --buckets 2 {' '.join(extra[4:])}".rstrip())
            server = start_server(backend=args.backend, buckets=2, extra_args=extra, timeout_sec=180,
                                  cuda_devices=[0] if args.backend == "cuda" else None)
            hp, lp = _specs(args, models, "paam", server.socket_path)
        else:
            hp, lp = _specs(args, models, "torch")
            if name == "inproc":
                hp.stream_priority, lp.stream_priority = HP_STREAM, LP_STREAM
        if name == "inproc":
            run.start(hp, [(i, lp) for i in range(n_lp)])
        else:
            run.start(hp, [], env)
            for i in range(n_lp):
                run.start(None, [(i, lp)], env)
        say(f"{len(run.procs)} process(es) starting, warming up ...")
        run.wait_ready(60)
        if name == "mps":
            notes.append(mps_servers(env))
        result = measure(run, args, lp.batch, say)
        result["notes"] = notes + [f"runners: {'; '.join(sorted(set(run.info)))}"]
        return result
    except (RuntimeError, OSError, PaamError) as exc:
        log = server.log()[-2000:] if server is not None else mps_log(env)
        say(f"failed: {str(exc).splitlines()[-1] if str(exc) else exc}")
        what = "paamd" if server is not None else "MPS control"
        return {"error": str(exc) + (f"\n{what} log (tail):\n{log}" if log else ""), "notes": notes}
    finally:
        run.close()
        if server is not None:
            server.stop()
        if mps_stop is not None:
            mps_stop()


def paamd_has(flag: str) -> bool:
    """Whether this paamd knows ``flag`` (its --help names it)."""
    from paam.testing import find_paamd
    try:
        r = subprocess.run([find_paamd(), "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError, PaamError):
        return False
    return flag in r.stdout + r.stderr


# ------------------------------------------------------------------------------------------
# MPS

def start_mps(folder: Path) -> tuple[dict[str, str], Callable[[], None], str]:
    """Starts an MPS control daemon with private pipe and log folders; returns the environment
    its clients need, a function that stops it, and a note. RuntimeError saying why it could
    not be started."""
    exe = shutil.which("nvidia-cuda-mps-control")
    if exe is None:
        raise RuntimeError("MPS: nvidia-cuda-mps-control is not on PATH")
    env = {"CUDA_MPS_PIPE_DIRECTORY": str(folder / "pipe"), "CUDA_MPS_LOG_DIRECTORY": str(folder / "log")}
    for d in env.values():
        Path(d).mkdir(parents=True, exist_ok=True)
    full = os.environ | env
    r = subprocess.run([exe, "-d"], env=full, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"MPS: nvidia-cuda-mps-control -d exited {r.returncode}: {(r.stderr or r.stdout).strip()}")

    def stop() -> None:
        try:
            subprocess.run([exe], input="quit\n", env=full, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            pass
    return env, stop, f"MPS control daemon started ({exe} -d, pipe {env['CUDA_MPS_PIPE_DIRECTORY']})"


def mps_log(env: dict[str, str] | None) -> str:
    """The tail of the MPS control daemon's log ("" without MPS)."""
    if not env:
        return ""
    path = Path(env["CUDA_MPS_LOG_DIRECTORY"]) / "control.log"
    try:
        return path.read_text(errors="replace")[-2000:]
    except OSError:
        return ""


def mps_servers(env: dict[str, str] | None) -> str:
    """What the control daemon says of its servers once the clients run (a server pid means the
    clients did go through MPS)."""
    exe = shutil.which("nvidia-cuda-mps-control")
    try:
        r = subprocess.run([exe or "nvidia-cuda-mps-control"], input="get_server_list\n", env=os.environ | (env or {}),
                           capture_output=True, text=True, timeout=20)
        servers = r.stdout.split()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"MPS server list not read: {exc}"
    if not servers:
        raise RuntimeError("MPS: the control daemon runs but lists no server: the clients did not go through MPS")
    return f"MPS server(s) {' '.join(servers)}"


# ------------------------------------------------------------------------------------------
# the command

def make_bench_models(args: argparse.Namespace, folder: Path, say: Callable[[str], None]) -> dict[str, Any]:
    """The HP and LP TorchScript files (one file where the architectures are the same, served
    under two names), in a process of their own so that this one never opens a CUDA context."""
    from paam import model_zoo
    cuda = args.backend == "cuda"
    source = args.source
    if source == "auto" and model_zoo.available_source() == "tool":
        source = "tool"
    names = {"hp": args.hp_arch, "lp": args.lp_arch}
    cmd = [sys.executable, "-m", "paam.model_zoo", str(folder), "--source", source, "--image", str(args.image),
           "--max-batch", str(max(1, args.lp_batch)), "--dtype", args.dtype if cuda else "float32",
           "--device", "cuda" if cuda else "cpu"]
    for arch in sorted(set(names.values())):
        cmd += ["--model", f"{arch}={arch}"]
    t0 = time.monotonic()
    say(f"making the models ({', '.join(sorted(set(names.values())))}; random weights) ...")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"making the models failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    made = {m.name: m for m in model_zoo.read_manifest(folder)}
    out = {}
    for role, arch in names.items():
        m = made[arch]
        sig = json.loads(Path(m.path + ".json").read_text())["inputs"][0]
        out[role] = {"arch": arch, "path": m.path, "description": m.description, "dtype": sig["dtype"],
                     "shape": sig["shape"][1:], "input": sig["name"]}
    say(f"models made in {time.monotonic() - t0:.0f} s: {made[names['hp']].description}")
    return out


def cmd_models(args: argparse.Namespace) -> int:
    why = _check(args)
    if why:
        print(f"paam bench models: {why}", file=sys.stderr)
        return 2
    if args.methods is None:
        args.methods = list(QUICK_METHODS if args.quick else METHODS)
    if args.seconds is None:
        args.seconds = 4.0 if args.quick else 20.0
    if args.lp_seconds is None:
        args.lp_seconds = 1.5 if args.quick else 5.0
    t_start = time.monotonic()

    def say(line: str, method: str = "") -> None:
        print(f"[{time.monotonic() - t_start:5.0f} s] {method + ': ' if method else ''}{line}", flush=True)

    payload: dict[str, Any] = {"bench": "models", "date": now_iso(), "command": "paam bench " + " ".join(
        sys.argv[sys.argv.index("models"):] if "models" in sys.argv else ["models"]),
        "machine": machine_info(), "code_commit": code_commit()}
    payload["config"] = {"backend": args.backend, "hp": f"{args.hp_arch} batch 1 at {args.hp_hz:g} Hz",
                         "lp": f"{args.lp_arch} batch {args.lp_batch}, back to back", "counts": args.counts,
                         "seconds_per_point": args.seconds, "lp_alone_seconds": args.lp_seconds,
                         "image": args.image, "server_args": args.server_args,
                         "paam": f"paamd --backend {args.backend} --buckets 2; HP chain priority {HP_PRIORITY}, "
                                 f"LP {LP_PRIORITY}", "inproc_stream_priorities": [HP_STREAM, LP_STREAM]}
    with tempfile.TemporaryDirectory(prefix="paam-bench-models-") as tmp:
        try:
            models = make_bench_models(args, Path(tmp) / "models", say)
        except (RuntimeError, subprocess.SubprocessError) as exc:
            print(f"paam bench models: {exc}", file=sys.stderr)
            return 1
        payload["models"] = {role: {k: m[k] for k in ("arch", "description", "dtype", "shape")}
                             for role, m in models.items()}
        if args.backend == "cuda" and not _torch_missing():
            payload["lp_kernels"] = _lp_kernels(models["lp"], args.lp_batch, say)
        results = {}
        for name in args.methods:
            say("begins", name)
            results[name] = run_method(name, args, models, Path(tmp), lambda line, n=name: say(line, n))
            if "skipped" in results[name]:
                say(f"skipped: {results[name]['skipped']}", name)
    payload["results"] = results
    write(args.out, payload)
    say(f"done; wrote {args.out}/models.{{json,md,png}} and models_summary.json")
    return 0 if any("points" in r and r["points"] for r in results.values()) else 1


def _lp_kernels(lp: dict[str, Any], batch: int, say: Callable[[str], None]) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=profile_kernels, args=(lp["path"], batch, lp["shape"], lp["dtype"], q), daemon=True)
    p.start()
    try:
        out = q.get(timeout=180)[1]
    except queue.Empty:
        out = {"error": "the profile did not finish within 180 s"}
    p.join(timeout=10)
    if p.is_alive():
        p.kill()
    if "error" in out:
        say(f"LP kernels: not profiled ({out['error']})")
    else:
        say(f"LP kernels (one batch-{batch} run): {out['kernels']}, p50 {out.get('p50_us', 0):.0f} µs, "
            f"p90 {out.get('p90_us', 0):.0f} µs, max {out.get('max_us', 0):.0f} µs, "
            f"total {out.get('total_us', 0):.0f} µs")
    return out


def write(out: Path, payload: dict[str, Any]) -> None:
    """models.json (everything, raw latencies too), models_summary.json (small, for
    docs/results/), models.md (the table) and models.png (the figure) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    derived = {name: report.derive(r) for name, r in payload["results"].items()}
    cfg = payload.get("config", {})
    header = (f"HP {cfg.get('hp', '?')}; LP {cfg.get('lp', '?')}; {payload['machine'].get('gpu', '')}; "
              f"{payload['date']}; commit {payload.get('code_commit', '?')}; `{payload['command']}`")
    text = report.table(derived, header)
    (out / "models.json").write_text(json.dumps(payload, indent=1))
    (out / "models_summary.json").write_text(json.dumps(report.summary(payload, derived), indent=1))
    (out / "models.md").write_text(text + "\n")
    report.plot(derived, out / "models.png", header.split("; `")[0])
    print(text)
