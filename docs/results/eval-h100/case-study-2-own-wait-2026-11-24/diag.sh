#!/usr/bin/env bash
# The PicasExecutor's own wait and the timer slack, on the GPU machine (thirteenth session):
# E0's hot path with empty (then 2 ms) callbacks (hop.py, from the lean-nodes folder), and the
# executor part of `paam ros-bench` (16 ready guard conditions on a default node). Each on core 2
# at nice -20, at the default timer slack (50 us) and at 1 ns (what paam.ros.rt's nice fallback
# now sets). Run from the repository root after scripts/device_eval.sh has set up paam.
set -u
H=docs/results/eval-h100/case-study-2-lean-nodes-2026-11-24/hop.py
run() { taskset -c 2 nice -n -20 "$@" 2>/dev/null; }
echo "== hop: empty callbacks, 100 instances (st: rclpy's SingleThreadedExecutor)"
for slack in 50000 1; do
  for k in st picas-rclpy picas; do HOP_SLACK_NS=$slack run python3 "$H" "$k" bare 100 0; done
done
echo "== hop: 2 ms of CPU per callback, 100 instances"
for k in picas-rclpy picas; do HOP_SLACK_NS=1 run python3 "$H" "$k" bare 100 2; done
echo "== ros-bench's executor part: per callback p50 (us), 16 callbacks x 300 rounds"
for slack in 50000 1; do
  SLACK=$slack run python3 - <<'PY'
import argparse, ctypes, os
slack = int(os.environ["SLACK"])
ctypes.CDLL(None).prctl(29, ctypes.c_ulong(slack), 0, 0, 0)
from paam.ros.bench import _executor_overhead
r = _executor_overhead(argparse.Namespace(callbacks=16, rounds=300))
for k, e in r.items():
    extra = {x: round(v, 1) for x, v in e.items() if x.endswith("_per_pick")}
    print(f"slack={slack}ns {k}: p50 {e['per_callback_us']['p50']:.1f}", extra)
PY
done
