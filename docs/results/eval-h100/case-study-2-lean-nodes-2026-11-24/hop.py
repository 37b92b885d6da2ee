"""Case study 2's hot path on one executor with (nearly) empty callbacks: what an instance costs
in the executor and messages alone. Eight nodes, the two lidar timers (100 ms) and the seven
subscriptions of E0's hot path (transformers, the fusion's two inputs, ray ground filter,
cluster detector, estimator); each callback burns W ms of CPU and publishes.

    python hop.py st|picas|picas-rclpy on|off|bare [INSTANCES [W]]

picas: the PicasExecutor with its own wait (paam.ros._readiness, since the thirteenth session);
picas-rclpy: the PicasExecutor waiting through rclpy's _wait_for_ready_callbacks (lean_wait=False,
as every PicasExecutor did before). HOP_SLACK_NS=N sets the thread's timer slack first (prctl; the
nice fallback of paam.ros.rt now sets 1 ns).

on: rclpy's default nodes; off: no services (paam.ros.create_lean_node), rclpy's default QoS
event handlers; bare: off and no event handlers on the topics (paam.ros.lean_publisher_options,
lean_subscription_options), as the experiments now run. Prints the median latency from the later
timer's callback start to the estimator's callback, and the executor thread's CPU time per
instance (the first two seconds, with discovery, included; the burns too).
"""
import ctypes
import os
import sys
import time

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Int64MultiArray

from paam.ros import (PicasExecutor, create_lean_node, lean_publisher_options,
                      lean_subscription_options)

kind, mode = sys.argv[1], sys.argv[2]
if os.environ.get("HOP_SLACK_NS"):
    ctypes.CDLL(None).prctl(29, ctypes.c_ulong(int(os.environ["HOP_SLACK_NS"])), 0, 0, 0)
N = int(sys.argv[3]) if len(sys.argv) > 3 else 100
W = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
ctx = Context()
rclpy.init(context=ctx)
qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE)
PE = lean_publisher_options() if mode == "bare" else {}
SE = lean_subscription_options() if mode == "bare" else {}
names = ["FL", "RL", "PTF", "PTR", "PCF", "RGF", "ECD", "OCE"]
nodes = {n: (rclpy.create_node(n, context=ctx, namespace="hop") if mode == "on"
             else create_lean_node(n, context=ctx, namespace="hop")) for n in names}
pubs = {n: nodes[n].create_publisher(Int64MultiArray, f"/hop/{n}", qos, **PE) for n in names[:-1]}
lat = []
cache = {}


def burn():
    t = time.thread_time_ns() + int(W * 1e6)
    while time.thread_time_ns() < t:
        pass


def send(n, t):
    burn()
    m = Int64MultiArray()
    m.data = [t] + [0] * 60
    pubs[n].publish(m)


def timer(n):
    return lambda: send(n, time.monotonic_ns())


def relay(n):
    return lambda msg: send(n, msg.data[0])


def fuse(i):
    def f(msg):
        cache[i] = msg.data[0]
        if len(cache) == 2:
            t = max(cache.values())
            cache.clear()
            send("PCF", t)
    return f


def oce(msg):
    lat.append((time.monotonic_ns() - msg.data[0]) / 1e3)


tm = [nodes["FL"].create_timer(0.1, timer("FL")), nodes["RL"].create_timer(0.1, timer("RL"))]
wiring = (("PTF", "FL", relay("PTF")), ("PTR", "RL", relay("PTR")), ("PCF", "PTF", fuse(0)),
          ("PCF", "PTR", fuse(1)), ("RGF", "PCF", relay("RGF")), ("ECD", "RGF", relay("ECD")),
          ("OCE", "ECD", oce))
subs = [nodes[n].create_subscription(Int64MultiArray, f"/hop/{src}", fn, qos, **SE)
        for n, src, fn in wiring]
print("entities: services", sum(len(list(n.services)) for n in nodes.values()),
      "waitables", sum(len(list(n.waitables)) for n in nodes.values()), "subscriptions",
      len(subs), "timers", len(tm), file=sys.stderr)
ex = (SingleThreadedExecutor(context=ctx) if kind == "st"
      else PicasExecutor(context=ctx, lean_wait=kind == "picas"))
if kind != "st":
    for i, e in enumerate(tm + subs):
        ex.set_callback_priority(e, 10 + i)
for n in nodes.values():
    ex.add_node(n)
end = time.monotonic() + 2 + N * 0.1
c0 = time.thread_time()
while time.monotonic() < end:
    ex.spin_once(timeout_sec=0.05)
cpu_per = (time.thread_time() - c0) / max(1, len(lat)) * 1e6
lat = sorted(lat[10:])
p50 = lat[len(lat) // 2]
slack = ctypes.CDLL(None).prctl(30, 0, 0, 0, 0)
print(f"{kind} params={mode} slack={slack}ns: n={len(lat)} p50={p50:.0f} us p90={lat[int(.9 * len(lat))]:.0f} "
      f"max={lat[-1]:.0f} us; executor CPU per instance {cpu_per:.0f} us")
