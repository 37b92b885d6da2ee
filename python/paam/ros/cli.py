"""``paam bridge``, ``paam ros-bench`` and ``paam ros-example``. Registering them imports no ROS 2 module; running
them without ROS 2 installed says how to install it."""
from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bridge", help="let processes on other machines use this machine's paamd over ROS 2",
        description="Runs a ROS 2 node beside paamd. Remote paam.ros.RemoteClient instances "
                    "register through it and send requests over ROS 2; the bridge submits them "
                    "to the local paamd at the remote chain's registered priority. Uses the "
                    "usual ROS 2 environment (ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE).")
    p.add_argument("--name", default="paam_bridge",
                   help="node name and prefix of the bridge's services and topics "
                        "(default paam_bridge)")
    p.add_argument("--socket", default=None,
                   help="paamd's socket (default: $PAAM_SOCKET or the default path)")
    p.add_argument("--lease", type=float, default=3.0,
                   help="seconds without a heartbeat after which a remote client is reaped "
                        "(default 3)")
    p.add_argument("--wait", default="hybrid", choices=["spin", "suspend", "hybrid"],
                   help="how the bridge's threads wait for paamd (default hybrid)")
    p.add_argument("--rt-priority", type=int, default=None,
                   help="RT priority of the bridge's executor thread: SCHED_FIFO when permitted, "
                        "else the nice value of paam.ros.rt.nice_for (90 -> -20)")
    p.add_argument("--cpu", type=int, default=None, help="pin the executor thread to this CPU")
    p.add_argument("--no-diagnostics", dest="diagnostics", action="store_false",
                   help="do not publish paamd's statistics on /diagnostics (default: once a "
                        "second, as diagnostic_msgs/DiagnosticArray)")
    p.set_defaults(func=_bridge)

    from paam.ros import bench
    bench.register(sub)
    from paam.ros import examples
    examples.register(sub)


def _bridge(args: argparse.Namespace) -> int:
    from paam.ros import ROS_MISSING_HINT, ros_available
    if not ros_available():
        print(f"paam bridge: {ROS_MISSING_HINT}", file=sys.stderr)
        return 2
    from paam.ros.bridge import main
    return main(name=args.name, socket=args.socket, lease_sec=args.lease, wait=args.wait,
                rt_priority=args.rt_priority, cpu=args.cpu, diagnostics=args.diagnostics)
