"""``paam ros-bench``: what the ROS 2 paths cost, measured side by side in one run.

Round trips, for each payload size, interleaved request by request so that all paths see the
same machine state:

* ``rclpy service`` — a bare rclpy service (``paam_msgs/Echo``) in another process that sends
  back the bytes an accelerator request would return; the caller converts the arrays to messages
  and back (as the bridge's client does) and spins its own executor until the reply is in. This
  is what ROS 2 itself costs for the payload.
* ``bridge`` — :class:`paam.ros.RemoteClient` → ``paam bridge`` (another process) → paamd → back.
* ``local shm`` — ``paam.Client`` on the same paamd: the shared-memory data plane.

The request is ``vector_add`` of two float32 vectors of SIZE bytes each (SIZE back), or, for
size 0, ``spin`` with a zero duration (parameters only, no payload).

Then the executor: K ready callbacks with trivial bodies, run by rclpy's SingleThreadedExecutor
and by PicasExecutor; per callback, the time of each, and the PicasExecutor's own refresh (re-poll
readiness) and choice (pick the highest priority) costs. And a hot path's pattern: a chain of
subscriptions on one executor, each callback publishing the next message; per hop, the wall time
and the CPU time outside the callbacks.

Writes ros-bench.json and ros-bench.md into ``--out``.
"""
from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from paam.argtypes import positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ros-bench", help="ROS 2 round trips: bridge vs bare rclpy service vs "
                       "local shared memory; executor overhead")
    p.add_argument("--requests", type=int, default=500, help="round trips per path and size")
    p.add_argument("--sizes", default="0,4096,262144,1048576",
                   help="bytes of each input vector (0: spin kernel, no payload)")
    p.add_argument("--wait", default="suspend", choices=["spin", "suspend", "hybrid"])
    p.add_argument("--callbacks", type=int, default=16, help="ready callbacks per executor round")
    p.add_argument("--rounds", type=int, default=300, help="executor rounds")
    p.add_argument("--hops", type=positive_int, default=8,
                   help="subscriptions in the chain benchmark")
    p.add_argument("--out", default="results/ros-bench")
    p.set_defaults(func=run)


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _summary(us: list[float]) -> dict[str, float]:
    return {"p50": _pct(us, 0.5), "p90": _pct(us, 0.9), "p99": _pct(us, 0.99),
            "mean": statistics.fmean(us), "n": len(us)}


# -- the echo server (a separate process) ------------------------------------------------------

def echo_server_main(service: str) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException

    from paam_msgs.srv import Echo

    rclpy.init()
    node = rclpy.create_node("paam_bench_echo")

    def echo(req, resp):
        resp.payload = list(req.payload[:req.reply])
        return resp
    node.create_service(Echo, service, echo)
    print("echo ready", flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    return 0


class _LineReader:
    """Drains a helper process's stdout pipe in a thread for the process's whole life.

    Reads the file descriptor unbuffered (``os.read``) and splits lines itself, so no line can
    sit in a Python buffer where a waiter would not see it, and keeps reading after the line a
    caller waited for, so the child never blocks on a full pipe. Lines are kept until a waiter
    consumes them with :meth:`wait_for`; only beyond ``keep`` unconsumed lines (a child that
    floods its output while nobody waits) are the oldest dropped, so memory stays bounded.
    The thread reads its own duplicate of the descriptor: whoever closes ``proc.stdout`` frees
    that number for the next pipe, which the thread must never read from.
    """

    def __init__(self, proc: subprocess.Popen, keep: int = 200_000) -> None:
        self.proc = proc
        self._fd = os.dup(proc.stdout.fileno())  # closed by the thread at end of output
        self._lines: "collections.deque[str]" = collections.deque(maxlen=keep)
        self._tail: "collections.deque[str]" = collections.deque(maxlen=50)  # for messages
        self._cond = threading.Condition()
        self._eof = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"paam-lines-{proc.pid}")
        self._thread.start()

    def _run(self) -> None:
        buf = b""
        try:
            while True:
                try:
                    chunk = os.read(self._fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                buf += chunk
                if b"\n" not in buf:
                    continue
                *complete, buf = buf.split(b"\n")
                lines = [raw.decode(errors="replace").rstrip("\r") for raw in complete]
                with self._cond:
                    self._lines.extend(lines)
                    self._tail.extend(lines)
                    self._cond.notify_all()
        finally:
            os.close(self._fd)
            with self._cond:
                if buf:
                    last = buf.decode(errors="replace")
                    self._lines.append(last)
                    self._tail.append(last)
                self._eof = True
                self._cond.notify_all()

    def wait_for(self, text: str, timeout: float) -> str:
        """The first unconsumed line containing ``text`` (lines before it are consumed too);
        SystemExit when the process ends its output or ``timeout`` passes without one."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                while self._lines:
                    line = self._lines.popleft()
                    if text in line:
                        return line
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    break
                self._cond.wait(left)
            seen = list(self._tail)
        why = "ended its output" if self._eof else f"did not within {timeout:g} s"
        raise SystemExit(f"helper process {why} without printing {text!r}; its last lines: {seen}")


def _wait_line(proc: subprocess.Popen, text: str, timeout: float) -> str:
    """Wait for a stdout line of ``proc`` containing ``text`` and return it. The first call
    starts a :class:`_LineReader` on ``proc`` that keeps draining its stdout from then on."""
    reader = getattr(proc, "_paam_line_reader", None)
    if reader is None:
        reader = proc._paam_line_reader = _LineReader(proc)
    return reader.wait_for(text, timeout)


# -- round trips -------------------------------------------------------------------------------

class _EchoCaller:
    """A bare rclpy service client, spinning its own executor in the calling thread."""

    def __init__(self, service: str) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        from paam_msgs.srv import Echo
        self.Echo = Echo
        self.ctx = Context()
        rclpy.init(context=self.ctx)
        self.node = rclpy.create_node("paam_bench_caller", context=self.ctx)
        self.cli = self.node.create_client(Echo, service)
        if not self.cli.wait_for_service(timeout_sec=20):
            raise SystemExit("echo service did not appear")
        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)

    def call(self, payload, reply: int) -> None:
        req = self.Echo.Request(payload=payload, reply=reply)
        fut = self.cli.call_async(req)
        # spin_once until done: rclpy's spin_until_future_complete adds milliseconds here.
        while not fut.done():
            self.ex.spin_once(timeout_sec=1.0)
        return fut.result()

    def close(self) -> None:
        import rclpy
        self.ex.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)


def _round_trips(args, bridge_name: str, socket: str, echo_service: str) -> list[dict]:
    import paam
    from paam.ros import RemoteClient
    from paam.ros import wire
    from paam_msgs.msg import Tensor

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    big = max(sizes + [8])
    kernels = {"spin": None, "vector_add": (2 * big + 64, big + 64)}
    echo = _EchoCaller(echo_service)
    remote = RemoteClient(priority=10, kernels=kernels, wait=args.wait, bridge=bridge_name,
                          connect_timeout_sec=20)
    local = paam.Client(priority=9, kernels=kernels, wait=args.wait, socket=socket)
    rows = []
    try:
        for size in sizes:
            n = size // 4
            a = np.random.default_rng(1).random(n, dtype=np.float32)
            b = np.random.default_rng(2).random(n, dtype=np.float32)
            if size == 0:
                calls = {
                    "rclpy service": lambda: echo.call([], 0),
                    "bridge": lambda: remote.request("spin", duration_ms=0.0),
                    "local shm": lambda: local.request("spin", duration_ms=0.0),
                }
            else:
                def service_call():
                    # What any rclpy program exchanging these arrays does: arrays to messages,
                    # call, message back to an array (the bridge's client does the same).
                    resp = echo.call([wire.to_tensor(a, Tensor), wire.to_tensor(b, Tensor)], 1)
                    return wire.from_tensor(resp.payload[0])
                expect = a + b
                out = remote.request("vector_add", a, b)
                if not np.allclose(out, expect):
                    raise SystemExit("bridge returned a wrong vector_add result")
                calls = {
                    "rclpy service": service_call,
                    "bridge": lambda: remote.request("vector_add", a, b),
                    "local shm": lambda: local.request("vector_add", a, b),
                }
            times: dict[str, list[float]] = {k: [] for k in calls}
            order = list(calls)
            for i in range(args.requests + 30):
                random.shuffle(order)
                for k in order:
                    t0 = time.perf_counter_ns()
                    calls[k]()
                    dt_us = (time.perf_counter_ns() - t0) / 1e3
                    if i >= 30:  # warm-up
                        times[k].append(dt_us)
            row = {"size": size, **{k: _summary(v) for k, v in times.items()}}
            row["ratio_p50"] = row["bridge"]["p50"] / row["rclpy service"]["p50"]
            row["ratio_mean"] = row["bridge"]["mean"] / row["rclpy service"]["mean"]
            rows.append(row)
            print(f"  size {size:>8} B: rclpy service p50 {row['rclpy service']['p50']:8.1f} us"
                  f" | bridge p50 {row['bridge']['p50']:8.1f} us (x{row['ratio_p50']:.2f})"
                  f" | local shm p50 {row['local shm']['p50']:8.1f} us", flush=True)
    finally:
        remote.close()
        local.close()
        echo.close()
    return rows


# -- executor overhead -------------------------------------------------------------------------

def _executor_overhead(args) -> dict:
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from paam.ros import PicasExecutor

    out = {}
    # the PicasExecutor twice: with its own wait (the default) and with rclpy's (lean_wait=False)
    for kind in ("SingleThreadedExecutor", "PicasExecutor", "PicasExecutor, rclpy's wait"):
        ctx = Context()
        rclpy.init(context=ctx)
        node = rclpy.create_node("paam_bench_exec", context=ctx)
        ran = [0]

        def cb():
            ran[0] += 1
        guards = [node.create_guard_condition(cb) for _ in range(args.callbacks)]
        ex = (SingleThreadedExecutor(context=ctx) if kind == "SingleThreadedExecutor"
              else PicasExecutor(context=ctx, lean_wait=kind == "PicasExecutor"))
        ex.add_node(node)
        if isinstance(ex, PicasExecutor):
            for i, g in enumerate(guards):
                ex.set_callback_priority(g, i % 4)
        per_cb = []
        for r in range(args.rounds + 20):
            ran[0] = 0
            for g in guards:
                g.trigger()
            t0 = time.perf_counter_ns()
            while ran[0] < len(guards):
                ex.spin_once(timeout_sec=1.0)
            if r >= 20:
                per_cb.append((time.perf_counter_ns() - t0) / 1e3 / len(guards))
        entry = {"per_callback_us": _summary(per_cb)}
        if isinstance(ex, PicasExecutor):
            st = ex.stats
            picks = max(1, st.picks)
            entry["choose_us_per_pick"] = st.choose_ns / picks / 1e3
            entry["poll_us_per_pick"] = st.poll_ns / picks / 1e3
            entry["refresh_us_per_pick"] = st.refresh_ns / picks / 1e3
            entry["refreshes_per_pick"] = st.refreshes / picks
            entry["max_candidates"] = st.max_candidates
        out[kind] = entry
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    return out


def _executor_chain(args) -> dict:
    """A hot path's pattern: a chain of ``args.hops`` subscriptions on one executor, each
    callback publishing the next message (std_msgs/Int64MultiArray of 40 values, KEEP_LAST(1),
    reliable, lean nodes), started by a publish from the spinning thread. Per hop: the wall time
    and the thread's CPU time outside the callbacks (the executor's and rclpy's own work)."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Int64MultiArray

    from paam.ros import PicasExecutor, lean

    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                     reliability=ReliabilityPolicy.RELIABLE)
    hops, out = args.hops, {}
    for kind in ("SingleThreadedExecutor", "PicasExecutor"):
        ctx = Context()
        rclpy.init(context=ctx)
        ns = f"paam_bench_chain_{os.getpid()}"
        nodes = [lean.create_lean_node(f"hop{i}", context=ctx, namespace=ns)
                 for i in range(hops + 1)]
        pubs = [n.create_publisher(Int64MultiArray, f"t{i}", qos, **lean.lean_publisher_options())
                for i, n in enumerate(nodes)]
        inside, ended = [0], [0]

        def make(i):
            def cb(msg):
                c0 = time.thread_time_ns()
                if i < hops:
                    m = Int64MultiArray()
                    m.data = msg.data
                    pubs[i].publish(m)
                else:
                    ended[0] += 1
                inside[0] += time.thread_time_ns() - c0
            return cb
        subs = [nodes[i].create_subscription(Int64MultiArray, f"t{i - 1}", make(i), qos,
                                             **lean.lean_subscription_options())
                for i in range(1, hops + 1)]
        ex = (SingleThreadedExecutor(context=ctx) if kind == "SingleThreadedExecutor"
              else PicasExecutor(context=ctx))
        try:
            for n in nodes:
                ex.add_node(n)
            if isinstance(ex, PicasExecutor):
                for i, sub in enumerate(subs):  # later stages more critical, as PiCAS assigns
                    ex.set_callback_priority(sub, 10 + i)
            time.sleep(0.5)  # discovery between the nodes' readers and writers
            wall, cpu = [], []
            for r in range(args.rounds + 20):
                inside[0], before = 0, ended[0]
                m = Int64MultiArray()
                m.data = list(range(40))
                t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
                pubs[0].publish(m)
                deadline = time.monotonic() + 5
                while ended[0] == before and time.monotonic() < deadline:
                    ex.spin_once(timeout_sec=0.5)
                if ended[0] == before:
                    raise RuntimeError(
                        f"ros-bench: round {r} of the {kind} chain did not reach its last hop "
                        f"in 5 s (a message lost between two of its {hops} subscriptions; "
                        "another DDS participant on ROS_DOMAIN_ID "
                        f"{os.environ.get('ROS_DOMAIN_ID', '0')}? set another one)")
                c1, t1 = time.thread_time_ns(), time.perf_counter_ns()
                if r >= 20:
                    wall.append((t1 - t0) / 1e3 / hops)
                    cpu.append((c1 - c0 - inside[0]) / 1e3 / hops)
            out[kind] = {"per_hop_wall_us": _summary(wall),
                         "per_hop_cpu_outside_us": _summary(cpu)}
        finally:
            ex.shutdown()
            for n in nodes:
                n.destroy_node()
            rclpy.shutdown(context=ctx)
    return out


# -- driver ------------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    from paam.ros import ROS_MISSING_HINT, ros_available
    if not ros_available():
        print(f"paam ros-bench: {ROS_MISSING_HINT}", file=sys.stderr)
        return 2
    import paam
    from paam.bench.overhead import machine_description

    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(100, 200)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    tag = f"{os.getpid()}"
    bridge_name = f"paam_bench_bridge_{tag}"
    echo_service = f"/paam_bench_echo_{tag}"
    machine = machine_description()
    print(f"paam ros-bench on {machine}; ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}, "
          f"{args.requests} round trips per path and size, wait={args.wait}", flush=True)
    helpers: list[subprocess.Popen] = []
    with paam.testing.start_server(buckets=1) as srv:
        try:
            bridge = subprocess.Popen(
                [sys.executable, "-m", "paam.cli", "bridge", "--name", bridge_name,
                 "--socket", srv.socket_path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            helpers.append(bridge)
            echo = subprocess.Popen([sys.executable, "-m", "paam.ros.bench", "--echo-server",
                                     echo_service], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
            helpers.append(echo)
            _wait_line(bridge, "ready", 30)
            _wait_line(echo, "echo ready", 30)
            print("round trips (p50):", flush=True)
            rows = _round_trips(args, bridge_name, srv.socket_path, echo_service)
        finally:
            for p in helpers:
                p.terminate()
            for p in helpers:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    print("executor, per callback:", flush=True)
    ex = _executor_overhead(args)
    for kind, e in ex.items():
        extra = ""
        if "choose_us_per_pick" in e:
            extra = (f"; per pick: priority choice {e['choose_us_per_pick']:.1f} us "
                     f"(up to {e['max_candidates']} candidates), outranking poll "
                     f"{e['poll_us_per_pick']:.1f} us, full re-poll "
                     f"{e['refresh_us_per_pick']:.1f} us ({e['refreshes_per_pick']:.2f} per pick)")
        print(f"  {kind:28s} p50 {e['per_callback_us']['p50']:7.1f} us{extra}", flush=True)

    print(f"executor, a chain of {args.hops} subscriptions, per hop:", flush=True)
    chain = _executor_chain(args)
    for kind, e in chain.items():
        print(f"  {kind:28s} wall p50 {e['per_hop_wall_us']['p50']:7.1f} us, CPU outside "
              f"callbacks p50 {e['per_hop_cpu_outside_us']['p50']:7.1f} us", flush=True)

    result = {"machine": machine, "date": dt.date.today().isoformat(),
              "command": "paam ros-bench " + " ".join(sys.argv[2:]), "wait": args.wait,
              "requests": args.requests, "round_trips": rows, "callbacks": args.callbacks,
              "executor": ex, "hops": args.hops, "executor_chain": chain}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ros-bench.json").write_text(json.dumps(result, indent=2))
    (out / "ros-bench.md").write_text(_markdown(result))
    print(f"wrote {out / 'ros-bench.json'} and {out / 'ros-bench.md'}")
    return 0


def _markdown(r: dict) -> str:
    lines = [f"Machine: {r['machine']}; date {r['date']}; `{r['command']}`; wait={r['wait']}, "
             f"{r['requests']} round trips per path and size.", "",
             "| vector size (B; 2 in, 1 out) | rclpy service p50 / p99 (µs) "
             "| bridge p50 / p99 (µs) | "
             "bridge / service (p50) | local shm p50 / p99 (µs) |",
             "|---:|---:|---:|---:|---:|"]
    for row in r["round_trips"]:
        s, b, loc = row["rclpy service"], row["bridge"], row["local shm"]
        lines.append(f"| {row['size']} | {s['p50']:.0f} / {s['p99']:.0f} | "
                     f"{b['p50']:.0f} / {b['p99']:.0f} | {row['ratio_p50']:.2f} | "
                     f"{loc['p50']:.0f} / {loc['p99']:.0f} |")
    lines += ["", f"Executor: {r['callbacks']} ready guard-condition callbacks with empty bodies "
              "per round, 4 priority levels.", "",
              "| executor | per callback p50 (µs) | priority choice per pick (µs) | "
              "outranking poll per pick (µs) | full re-poll per pick (µs) |",
              "|---|---:|---:|---:|---:|"]
    def cell(e, key):
        return f"{e[key]:.1f}" if key in e else "–"
    for kind, e in r["executor"].items():
        lines.append(f"| {kind} | {e['per_callback_us']['p50']:.1f} | "
                     f"{cell(e, 'choose_us_per_pick')} | {cell(e, 'poll_us_per_pick')} | "
                     f"{cell(e, 'refresh_us_per_pick')} |")
    if "executor_chain" in r:
        lines += ["", f"Executor, a chain of {r['hops']} subscriptions on one executor, each "
                  "callback publishing the next message:", "",
                  "| executor | per hop wall p50 / p99 (µs) | per hop CPU outside callbacks p50 "
                  "/ p99 (µs) |", "|---|---:|---:|"]
        for kind, e in r["executor_chain"].items():
            w, c = e["per_hop_wall_us"], e["per_hop_cpu_outside_us"]
            lines.append(f"| {kind} | {w['p50']:.1f} / {w['p99']:.1f} | "
                         f"{c['p50']:.1f} / {c['p99']:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--echo-server":
        sys.exit(echo_server_main(sys.argv[2]))
    raise SystemExit("usage: python -m paam.ros.bench --echo-server SERVICE")
