"""ROS 2 examples to copy: ``paam ros-example NAME`` (or ``python -m paam.ros.examples.NAME``).

* ``perception`` (:mod:`paam.ros.examples.perception`): a camera node publishing
  ``sensor_msgs/Image``, a detector node that runs a model through paamd at the critical chain's
  priority on a :class:`paam.ros.PicasExecutor`, and a best-effort node in another process that
  runs a heavier model all the time; prints the detector's latency without and with that load.

Registering the command imports no ROS 2 module; running it without ROS 2 says how to install it.
"""
from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ros-example", help="ROS 2 examples to copy (paam.ros.examples)",
                       description=__doc__.split("\n\n")[0])
    examples = p.add_subparsers(dest="example", metavar="EXAMPLE")
    examples.required = True
    from paam.ros.examples import perception
    perception.add_arguments(examples.add_parser(
        "perception", help="camera -> detector (critical chain) beside a best-effort model, through paamd",
        description=perception.__doc__.split("\n\n")[0]))


def _missing_ros() -> int | None:
    from paam.ros import ROS_MISSING_HINT, ros_available
    if ros_available():
        try:
            import sensor_msgs.msg  # noqa: F401
        except ImportError:
            print("paam ros-example: sensor_msgs is not installed: run `make ros` "
                  "(scripts/requirements-ros.txt has ros-jazzy-sensor-msgs)", file=sys.stderr)
            return 2
        return None
    print(f"paam ros-example: {ROS_MISSING_HINT}", file=sys.stderr)
    return 2
