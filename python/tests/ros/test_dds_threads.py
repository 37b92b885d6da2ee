"""paam.ros.rt.dds_threads_rt around a real rclpy context and node: Fast DDS's threads at
the executor's SCHED_FIFO priority, but its sender thread (dds.asyn*) at SCHED_OTHER (the
docstring says why). In a child process, whose SCHED_FIFO threads die with it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="Linux only")]

_CHILD = r"""
import json, os, sys
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(2))
except OSError as err:
    print(json.dumps({"skip": str(err)})); sys.exit(0)
import rclpy
from rclpy.context import Context
from paam.ros.rt import dds_threads_rt

def threads():
    out = {}
    for t in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{t}/comm") as f:
            out[int(t)] = (f.read().strip(), os.sched_getscheduler(int(t)),
                           os.sched_getparam(int(t)).sched_priority)
    return out

ctx = Context()
before = threads()
with dds_threads_rt() as report:
    rclpy.init(context=ctx, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
    node = rclpy.create_node("dds_threads_test", context=ctx)
new = {tid: v for tid, v in threads().items() if tid not in before}
print(json.dumps({"new": list(new.values()), "report": report,
                  "caller": [os.sched_getscheduler(0), os.sched_getparam(0).sched_priority]}))
node.destroy_node()
rclpy.shutdown(context=ctx)
"""


def test_fast_dds_threads_at_the_callers_sched_fifo_but_the_sender_thread():
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if "skip" in res:
        pytest.skip(f"this machine refuses SCHED_FIFO: {res['skip']}")
    fifo, other = os.SCHED_FIFO, os.SCHED_OTHER
    assert res["caller"] == [fifo, 2]
    dds = {name: (policy, prio) for name, policy, prio in res["new"] if name.startswith("dds.")}
    senders = [n for n in dds if n.startswith("dds.asyn")]
    # Fast DDS started its sender thread and others in the block
    assert senders and len(dds) > len(senders), res
    for name, got in dds.items():
        assert got == ((other, 0) if name.startswith("dds.asyn") else (fifo, 2)), (name, got)
    # rclpy's own threads too: every new thread but the senders at the caller's priority
    assert all((p, q) == (fifo, 2) for n, p, q in res["new"] if not n.startswith("dds.asyn"))
    assert sorted(res["report"]["kept"]) == sorted(senders)
