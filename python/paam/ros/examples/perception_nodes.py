"""The nodes of the perception example (:mod:`paam.ros.examples.perception`), ready to copy.

* :class:`Camera` publishes synthetic ``sensor_msgs/Image`` frames (rgb8, a moving gradient).
* :class:`Detector` runs a model through paamd on each frame, with a client registered at the
  ``perception`` chain's priority (:func:`perception_chain`), and reports each result's latency.
* :class:`Background` runs a heavier model back to back, with a client of the best-effort
  ``background`` chain (:func:`background_chain`): ranked below every critical chain, on the
  executor and on the accelerator.

Each node runs on a :class:`paam.ros.PicasExecutor` that takes its callback priorities and
real-time settings from its chain (``chain.configure_executor``).
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
from rclpy.node import Node
from rclpy.time import Time
from sensor_msgs.msg import Image

import paam
from paam.ros import CallbackSpec, Chain

TOPIC = "camera/image"


def perception_chain(rate_hz: float, *, executor_priority: int = 0, executor_cpu: int = -1) -> Chain:
    """The critical chain: camera -> detect, one frame per period."""
    return Chain("perception", priority=10, period_ms=1000.0 / rate_hz,
                 callbacks=[CallbackSpec("camera", cpu_wcet_ms=1.0),
                            CallbackSpec("detect", cpu_wcet_ms=2.0, segments_ms=[20.0])],
                 executor="perception", executor_priority=executor_priority, executor_cpu=executor_cpu)


def background_chain() -> Chain:
    """The best-effort chain: a heavier model, all the time."""
    return Chain("background", priority=1, period_ms=1000.0, best_effort=True,
                 callbacks=[CallbackSpec("heavy")], executor="background")


def to_images(msg: Image, dtype: str) -> np.ndarray:
    """An rgb8 frame as the model's input: float [1, 3, H, W] in 0..1."""
    frame = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)
    return np.ascontiguousarray(frame.transpose(2, 0, 1)[None], dtype=np.dtype(dtype)) / np.dtype(dtype).type(255)


class Camera(Node):
    """Publishes ``side`` x ``side`` rgb8 frames at ``rate_hz`` on :data:`TOPIC`."""

    def __init__(self, side: int, rate_hz: float):
        super().__init__("camera")
        self.publisher = self.create_publisher(Image, TOPIC, 2)
        yy, xx = np.mgrid[0:side, 0:side]
        self._scene = np.stack([xx * 255 // side, yy * 255 // side, (xx + yy) * 127 // side], -1).astype(np.uint8)
        self._side = side
        self.frames = 0
        self.timer = self.create_timer(1.0 / rate_hz, self.capture)

    def capture(self) -> None:
        msg = Image()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = "camera"
        msg.height = msg.width = self._side
        msg.encoding = "rgb8"
        msg.step = self._side * 3
        msg.data = np.roll(self._scene, self.frames % self._side, axis=1).tobytes()  # a moving scene
        self.publisher.publish(msg)
        self.frames += 1


class Detector(Node):
    """Runs ``model`` on every frame through ``client`` (registered at the chain's priority) and
    calls ``on_result(infer_ms, frame_ms, top_class)``: the infer call's latency and the time
    from the frame's capture (its header stamp) to the result."""

    def __init__(self, client: paam.Client, model: str, dtype: str,
                 on_result: Callable[[float, float, int], None]):
        super().__init__("detector")
        self.client, self.model, self.dtype, self.on_result = client, model, dtype, on_result
        self.subscription = self.create_subscription(Image, TOPIC, self.detect, 2)

    def detect(self, msg: Image) -> None:
        images = to_images(msg, self.dtype)
        t0 = time.perf_counter_ns()
        out = self.client.infer(self.model, images=images)
        infer_ms = (time.perf_counter_ns() - t0) / 1e6
        frame_ms = (self.get_clock().now() - Time.from_msg(msg.header.stamp)).nanoseconds / 1e6
        # A real detector publishes its detections here (vision_msgs/Detection2DArray, ...).
        self.on_result(infer_ms, frame_ms, int(np.argmax(out["logits"][0])))


class Background(Node):
    """Runs ``model`` on a fixed batch back to back (a timer that is always due)."""

    def __init__(self, client: paam.Client, model: str, images: np.ndarray):
        super().__init__("background")
        self.client, self.model, self.images = client, model, images
        self.runs = 0
        self.timer = self.create_timer(0.001, self.run)

    def run(self) -> None:
        self.client.infer(self.model, images=self.images)
        self.runs += 1
