"""The reference system's nodes as rclpy nodes: each node kind's callbacks and the sample
history its messages carry.

Messages (``std_msgs/Int64MultiArray``) carry the reference system's sample history: for every
node the sample went through, its publish time, sequence number and the input samples it found
missing (sequence-number gaps, the reference system's "dropped samples"). The estimator's
callback records each hot-path instance (:func:`record_hot_instance`).
"""
from __future__ import annotations

import os
import time

import numpy as np

from paam_experiments.case_study2 import graph, records
from paam_experiments.case_study2.callbacks import ProcessGraph

# Int64MultiArray.data = [node id, stamp ns, seq, missing] * entries; one entry per node the
# sample went through (the latest when two inputs share one).


def parse_history(data) -> dict[int, tuple[int, int, int]]:
    a = np.asarray(data, dtype=np.int64).reshape(-1, 4)
    return {int(r[0]): (int(r[1]), int(r[2]), int(r[3])) for r in a}


def pack_history(hist: dict[int, tuple[int, int, int]]) -> list[int]:
    out: list[int] = []
    for k, (stamp, seq, miss) in hist.items():
        out += (k, stamp, seq, miss)
    return out


def merge_history(into: dict, other: dict) -> None:
    """``other``'s entries into ``into``: per node, the later stamp wins."""
    for k, v in other.items():
        if k not in into or v[0] > into[k][0]:
            into[k] = v


def send(g: ProcessGraph, pub, hist: dict) -> None:
    """Publish sample history ``hist`` on ``pub``."""
    m = g.msg_t()
    m.data = pack_history(hist)
    pub.publish(m)


def build(g: ProcessGraph, spec: graph.NodeSpec, executor: str) -> None:
    """Node ``spec`` on ``g``, its callbacks on ``executor``."""
    node = g.lean.create_lean_node(spec.name, context=g.ctx, namespace=f"cs2_{os.getpid()}")
    g.nodes[spec.name] = node
    me = graph.NODE_IDS[spec.name]
    gpu = spec.name not in graph.NO_ACCELERATOR
    state = {"seq": 0, "last_in": {}, "missing": 0}

    def missing(topic: str, hist) -> int:
        src = graph.NODE_IDS[graph.producer(topic)]
        seq = hist[src][1] if src in hist else None
        last = state["last_in"].get(topic)
        state["last_in"][topic] = seq
        if seq is None or last is None:
            return 0
        gap = max(0, seq - last - 1)
        if gap and time.monotonic_ns() >= g.record_from[0]:
            key = f"{spec.name}<-{topic}"
            g.sub_drops[key] = g.sub_drops.get(key, 0) + gap
        return gap

    def stamp(hist: dict, miss: int) -> dict:
        state["seq"] += 1
        hist[me] = (time.monotonic_ns(), state["seq"], miss)
        return hist

    if spec.kind == "sensor":
        pub = g.publisher(node, spec.name)
        work = g.work_fn(spec.name, 0, spec.run_ms[0], gpu)
        counted = spec.name in g.published

        timer: list = []
        period_ns = int(spec.period_ms * 1e6)

        async def on_timer() -> None:
            t0 = time.monotonic_ns()
            if counted:  # rcl set the next call one period after this one's due time
                left = timer[0].time_until_next_call()
                due = t0 + left - period_ns if left is not None else t0
            await work()
            state["seq"] += 1
            send(g, pub, {me: (t0, state["seq"], 0)})
            if counted:
                dues = g.lidar_due[spec.name]
                dues[state["seq"]] = due
                dues.pop(state["seq"] - 50, None)  # a sample older than 5 s fuses no more
                if t0 >= g.record_from[0]:
                    g.published[spec.name] += 1
        timer.append(g.timer(node, spec.period_ms, on_timer, executor, spec.name))
    elif spec.kind in ("transform", "command"):
        pub = g.publisher(node, spec.name) if spec.kind == "transform" else None
        work = g.work_fn(spec.name, 0, spec.run_ms[0], gpu)
        topic = spec.inputs[0]
        is_oce = spec.name == "ObjectCollisionEstimator"

        async def on_msg(msg) -> None:
            t0 = time.monotonic_ns()
            hist = parse_history(msg.data)
            miss = missing(topic, hist)
            await work()
            hist = stamp(hist, miss)
            if pub is not None:
                send(g, pub, hist)
            if is_oce:
                record_hot_instance(g, hist, t0)
        g.subscribe(node, topic, on_msg, executor, spec.name)
    elif spec.kind == "fusion":
        pub = g.publisher(node, spec.name)
        fuse = g.work_fn(spec.name, 0, spec.run_ms[0], gpu)
        cache_work = [g.work_fn(spec.name, 0, spec.run_ms[1], gpu) for _ in spec.inputs]
        cache: list = [None] * len(spec.inputs)
        for i, topic in enumerate(spec.inputs):
            # (both inputs in the node's one mutually exclusive callback group: with async
            # segments too, one runs at a time on the shared cache)
            async def on_msg(msg, i=i) -> None:
                cache[i] = parse_history(msg.data)
                if any(c is None for c in cache):
                    await cache_work[i]()
                    return
                await fuse()
                # Missing samples as the reference system counts them at a fusion: the
                # sequence gap of each fused input since its last fusion (a sample
                # overwritten in the cache counts as dropped).
                miss = sum(missing(t, c) for t, c in zip(spec.inputs, cache))
                merged: dict = {}
                for c in cache:
                    merge_history(merged, c)
                for j in range(len(cache)):
                    cache[j] = None
                send(g, pub, stamp(merged, miss))
            g.subscribe(node, topic, on_msg, executor, spec.name)
    elif spec.kind == "intersection":
        for i, (t_in, t_out) in enumerate(zip(spec.inputs, spec.outputs)):
            pub = g.publisher(node, t_out)
            work = g.work_fn(spec.name, i, spec.run_ms[i], gpu)
            conn = {"seq": 0}

            async def on_msg(msg, t_in=t_in, pub=pub, work=work, conn=conn) -> None:
                hist = parse_history(msg.data)
                miss = missing(t_in, hist)
                await work()
                conn["seq"] += 1
                hist[me] = (time.monotonic_ns(), conn["seq"], miss)
                send(g, pub, hist)
            # With async segments or --intersection-groups connection each connection
            # gets a callback group of its own: the settings connection (running, or
            # awaiting its low-priority request) then does not hold the hot-path connection
            # of the same node out where threads could run both (they share no state).
            # Else both are in the node's default group, as in the reference system.
            group = None
            if g.async_segments or g.cfg.intersection_groups == "connection":
                from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
                group = MutuallyExclusiveCallbackGroup()
            g.subscribe(node, t_in, on_msg, executor, spec.name, i, group)
    elif spec.kind == "cyclic":
        pub = g.publisher(node, spec.name)
        work = g.work_fn(spec.name, 0, spec.run_ms[0], gpu)
        cache_work = g.work_fn(spec.name, 1, spec.run_ms[1], gpu)
        cache: dict = {}
        for topic in spec.inputs:
            async def on_msg(msg, topic=topic) -> None:
                hist = parse_history(msg.data)
                state["missing"] += missing(topic, hist)
                cache[topic] = hist
                await cache_work()
            g.subscribe(node, topic, on_msg, executor, spec.name)

        async def on_timer() -> None:
            t0 = time.monotonic_ns()
            if t0 >= g.record_from[0]:
                g.bp_starts.append(t0)
            await work()
            merged: dict = {}
            for h in cache.values():
                merge_history(merged, h)
            cache.clear()
            miss, state["missing"] = state["missing"], 0
            send(g, pub, stamp(merged, miss))
        g.timer(node, spec.period_ms, on_timer, executor, spec.name)
    else:
        raise ValueError(spec.kind)


def record_hot_instance(g: ProcessGraph, hist: dict, oce_start: int) -> None:
    """One hot-path instance, at the estimator's end: its sample history ``hist`` and the
    estimator callback's start."""
    end = time.monotonic_ns()
    ids = graph.NODE_IDS
    f, r = hist.get(ids["FrontLidarDriver"]), hist.get(ids["RearLidarDriver"])
    if f is None or r is None:
        return
    start = max(f[0], r[0])
    if start < g.record_from[0]:
        return
    miss = sum(v[2] for k, v in hist.items() if k in graph.HOT_IDS)
    # (the reference system stamps a node at its callback's start: its hot-path latency
    # ends where the estimator's callback starts; ours at its end)
    hops = tuple(hist[ids[n]][0] - start if ids[n] in hist else records.NO_STAMP
                 for n in graph.HOT_HOPS)
    # the later lidar callback's start after the earlier one's: the timers' phase plus any
    # wait of the later callback for the executor; and, from the timers' due times, the
    # phase alone and how late the later callback started
    gap = start - min(f[0], r[0])
    due_f = g.lidar_due["FrontLidarDriver"].get(f[1])
    due_r = g.lidar_due["RearLidarDriver"].get(r[1])
    if due_f is None or due_r is None:
        phase = late = records.NO_STAMP
    else:
        phase = abs(due_f - due_r)
        late = start - (due_f if f[0] >= r[0] else due_r)
    g.hot.append((end, end - start, miss, f[1], r[1], oce_start - start, gap, phase, late)
                 + hops + (int(f[0] >= r[0]),))
