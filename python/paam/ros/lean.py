"""Nodes and topics that cost rclpy's executors less.

rclpy's executors rebuild the wait set over every entity of every node they spin, in Python, at
every wait (:class:`paam.ros.PicasExecutor` keeps it between waits, but still looks at every
entity each time): each entity costs each callback some microseconds whether it is ever ready or
not. By default an rclpy node brings seven services (parameters and type description), a rosout
publisher and a /parameter_events publisher, and every publisher and subscription two QoS event
handlers that only log incompatible QoS. On case study 2's hot-path executor (eight nodes) the
services and the handlers of the workload's own topics were 90 of the 116 entities waited on,
and E0 spent 10-12 ms of every 100 ms instance outside its callbacks; without them, 4.4-6.3 ms
(measured on the lent H100 machine, 2026-11-24).

:func:`create_lean_node` makes a node without the services and rosout (its /parameter_events
publisher, which rclpy always creates, stays, without its two QoS event handlers);
:func:`lean_publisher_options` and
:func:`lean_subscription_options` are the keyword arguments that create a topic without the
event handlers. A lean node's parameters can still be declared and read in the process, but
``ros2 param`` and other nodes cannot reach them.

    node = paam.ros.create_lean_node("detector", namespace="perception")
    pub = node.create_publisher(Image, "boxes", 1, **paam.ros.lean_publisher_options())
"""
from __future__ import annotations

from typing import Any

import rclpy
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.parameter import Parameter

__all__ = ["create_lean_node", "lean_publisher_options", "lean_subscription_options"]


def create_lean_node(name: str, **kwargs: Any):
    """``rclpy.create_node(name, **kwargs)`` without parameter, type-description or rosout
    entities. ``kwargs`` are ``rclpy.create_node``'s (``context``, ``namespace``, ...);
    ``parameter_overrides`` given there are kept."""
    overrides = list(kwargs.pop("parameter_overrides", None) or [])
    if not any(p.name == "start_type_description_service" for p in overrides):
        overrides.append(Parameter("start_type_description_service", value=False))
    kwargs.setdefault("start_parameter_services", False)
    kwargs.setdefault("enable_rosout", False)
    node = rclpy.create_node(name, parameter_overrides=overrides, **kwargs)
    _drop_event_handlers(node, getattr(node, "_parameter_event_publisher", None))
    return node


def _drop_event_handlers(node, publisher) -> None:
    """Take ``publisher``'s QoS event handlers (rclpy's defaults, which only log an incompatible
    QoS or type) off ``node`` and destroy them, so that no executor waits on them. Every lean
    node's /parameter_events publisher has two: on case study 2's hot-path executor they were
    about a tenth of its CPU time outside callbacks (2-core VM, py-spy, 2026-11-24)."""
    handlers = getattr(publisher, "event_handlers", None)
    if not handlers:
        return
    for handler in list(handlers):
        node.remove_waitable(handler)
        handler.destroy()
    handlers.clear()  # (Node.destroy_publisher would take them off the node again)


def lean_publisher_options() -> dict[str, Any]:
    """Keyword arguments of ``Node.create_publisher`` for a publisher without QoS event
    handlers."""
    return {"event_callbacks": PublisherEventCallbacks(use_default_callbacks=False)}


def lean_subscription_options() -> dict[str, Any]:
    """Keyword arguments of ``Node.create_subscription`` for a subscription without QoS event
    handlers."""
    return {"event_callbacks": SubscriptionEventCallbacks(use_default_callbacks=False)}
