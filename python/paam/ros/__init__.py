"""PAAM in ROS 2 (rclpy, Jazzy).

* :class:`PicasExecutor` — PiCAS's priority-driven executor: per-entity callback priorities or
  priorities inherited from chains, always the highest-priority ready callback, SCHED_FIFO and
  CPU affinity for the spinning thread (``set_executor_priority_cpu``, ``spin_rt``; a nice value
  where the machine refuses SCHED_FIFO, :mod:`paam.ros.rt`).
* :class:`MultiThreadedPicasExecutor` — the same picking over several threads that share all its
  callbacks (each free thread runs the highest-priority ready callback; rclpy's callback groups
  respected), every thread pinned to a CPU of its own (``set_executor_priority_cpus``).
* :func:`await_result` — ``await await_result(client.submit(...))`` in an ``async def``
  callback: the executor runs other work until the accelerator is done (with
  ``PicasExecutor(awaiting_holds_priority=True)`` only work of that callback's priority or above).
* :class:`Chain`, :class:`CallbackSpec` — a chain declared once, from which the executor's
  priorities, the real-time settings, each callback's paam registration and timing model, and the
  analysis system (:func:`analysis_system`) come; ``best_effort=True`` chains rank below every
  critical chain and are registered best-effort.
* :class:`RemoteClient` — the API of ``paam.Client`` for a process on another machine, through a
  ``paam bridge`` running beside that machine's ``paamd``.
* :class:`Bridge` — the bridge node (``paam bridge`` on the command line).
* :func:`create_lean_node`, :func:`lean_publisher_options`, :func:`lean_subscription_options` —
  nodes and topics without the entities rclpy adds by default, which every executor walks in
  Python at each wait (:mod:`paam.ros.lean`).

Lifecycle of a node that uses the accelerator::

    chain = paam.ros.Chain("perception", priority=10, period_ms=100,
                           callbacks=[paam.ros.CallbackSpec("detect", cpu_wcet_ms=2,
                                                            segments_ms=[5], kernels=["spin"])])
    executor = paam.ros.PicasExecutor()
    timer = chain.bind("detect", node.create_timer(0.1, on_timer))
    chain.configure_executor(executor)          # callback priorities + SCHED_FIFO/affinity
    client = chain.client("detect")            # registered at the chain's priority
    executor.add_node(node)
    executor.spin_rt()

Names are imported on first use, so ``import paam.ros`` works without ROS 2 installed; using
anything that needs rclpy then raises ImportError with the setup command.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "PicasExecutor": "paam.ros.executor",
    "PickStats": "paam.ros.executor",
    "MultiThreadedPicasExecutor": "paam.ros.executor_mt",
    "Chain": "paam.ros.helpers",
    "CallbackSpec": "paam.ros.helpers",
    "picas_callback_priorities": "paam.ros.helpers",
    "analysis_system": "paam.ros.helpers",
    "await_result": "paam.ros.executor",
    "AcceleratorFuture": "paam.ros.executor",
    "RemoteClient": "paam.ros.remote",
    "BridgeNotRunning": "paam.ros.remote",
    "ClientRetired": "paam.ros.remote",
    "Bridge": "paam.ros.bridge",
    "RtReport": "paam.ros.rt",
    "apply_rt": "paam.ros.rt",
    "nice_for": "paam.ros.rt",
    "create_lean_node": "paam.ros.lean",
    "lean_publisher_options": "paam.ros.lean",
    "lean_subscription_options": "paam.ros.lean",
}

__all__ = sorted(_EXPORTS)

ROS_MISSING_HINT = ("ROS 2 (rclpy) is not installed in this environment: run `make ros` "
                    "(pip install -r scripts/requirements-ros.txt, then ros2/build_msgs.sh)")


def ros_available() -> bool:
    """True when rclpy and paam_msgs import."""
    try:
        importlib.import_module("rclpy")
        importlib.import_module("paam_msgs.msg")
    except ImportError:
        return False
    return True


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'paam.ros' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as err:
        if err.name and (err.name.startswith("rclpy") or err.name.startswith("paam_msgs")):
            raise ImportError(f"paam.ros.{name}: {ROS_MISSING_HINT}") from err
        raise
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))
