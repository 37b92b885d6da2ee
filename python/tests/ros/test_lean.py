"""paam.ros.lean: nodes and topics without the entities rclpy adds by default."""
from __future__ import annotations

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from std_msgs.msg import Int64

import paam.ros
from paam.ros import create_lean_node, lean_publisher_options, lean_subscription_options


def _ctx() -> Context:
    ctx = Context()
    rclpy.init(context=ctx)
    return ctx


def test_a_lean_node_and_its_topics_have_only_what_the_workload_uses():
    ctx = _ctx()
    try:
        stock = rclpy.create_node("stock", context=ctx)
        node = create_lean_node("lean", context=ctx, namespace="paam_test")
        assert node.get_namespace() == "/paam_test"
        assert len(list(stock.services)) == 7  # parameters (6) and type description
        assert list(node.services) == []
        # rclpy gives the /parameter_events publisher two handlers; the lean node drops them
        assert len(list(stock.waitables)) == 2
        assert list(node.waitables) == []
        assert [p.topic_name for p in node.publishers] == ["/parameter_events"]
        node.create_publisher(Int64, "t", 1, **lean_publisher_options())
        node.create_subscription(Int64, "t", lambda _m: None, 1, **lean_subscription_options())
        assert list(node.waitables) == []
        node.create_publisher(Int64, "u", 1)  # rclpy's defaults add two handlers
        assert len(list(node.waitables)) == 2
        node.declare_parameter("p", 1)  # setting it publishes on /parameter_events
        assert node.set_parameters([Parameter("p", value=2)])[0].successful
        node.destroy_node()  # its entities go cleanly, /parameter_events' publisher too
        stock.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def test_a_lean_node_keeps_given_parameter_overrides_and_messages_flow():
    ctx = _ctx()
    try:
        node = create_lean_node("lean2", context=ctx, parameter_overrides=[
            Parameter("rate", value=5.0)])
        assert node.declare_parameter("rate", 1.0).value == 5.0
        assert list(node.services) == []
        got = []
        pub = node.create_publisher(Int64, "lean_flow", 1, **lean_publisher_options())
        node.create_subscription(Int64, "lean_flow", lambda m: got.append(m.data), 1,
                                 **lean_subscription_options())
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(node)
        for i in range(200):  # until discovery has matched them
            pub.publish(Int64(data=i))
            ex.spin_once(timeout_sec=0.02)
            if got:
                break
        assert got, "a lean publisher's message never reached a lean subscription"
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def test_lean_names_are_exported():
    for name in ("create_lean_node", "lean_publisher_options", "lean_subscription_options"):
        assert name in paam.ros.__all__
