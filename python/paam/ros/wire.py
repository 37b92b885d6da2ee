"""What the bridge and remote clients agree on: names, QoS, and array/error conversion.

Names, relative to the bridge's name ``B`` (default ``paam_bridge``; one bridge per paamd):

=============================  =========================  =====================================
``/B/register``                service ``Register``       register a remote callback
``/B/unregister``              service ``Unregister``     leave
``/B/heartbeat``               topic ``Heartbeat``        remote clients' sign of life
``/B/status``                  topic ``ServerStatus``     the bridge's sign of life and counters
``/B/c<ID>/request``           topic ``RemoteRequest``    one registration's requests
``/B/c<ID>/response``          topic ``RemoteResponse``   its responses
=============================  =========================  =====================================

The data path uses a pair of topics per registration rather than a service: the bridge's
subscription for a registration carries that chain's priority in its PicasExecutor, and a
response is published straight from the thread that collected the result from paamd.
"""
from __future__ import annotations

import array
from typing import Any, Mapping

import numpy as np

DEFAULT_BRIDGE = "paam_bridge"
DEFAULT_LEASE_SEC = 3.0
STATUS_PERIOD_SEC = 0.5


def topic(bridge: str, leaf: str) -> str:
    return f"/{bridge.strip('/')}/{leaf}"


def request_topic(bridge: str, client_id: int) -> str:
    return topic(bridge, f"c{client_id}/request")


def response_topic(bridge: str, client_id: int) -> str:
    return topic(bridge, f"c{client_id}/response")


def data_qos():
    """Reliable, volatile, keep last 64: requests and responses are never silently dropped."""
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    return QoSProfile(depth=64, reliability=ReliabilityPolicy.RELIABLE,
                      history=HistoryPolicy.KEEP_LAST)


def status_qos():
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    return QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)


def to_tensor(arr, Tensor):
    """numpy array (or scalar) → paam_msgs/Tensor (one copy, into the message's byte array)."""
    a = np.asarray(arr)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    t = Tensor()
    t.dtype = a.dtype.str if a.dtype.byteorder == ">" else a.dtype.name
    t.shape = array.array("I", a.shape)
    data = array.array("B")
    if a.nbytes:
        data.frombytes(memoryview(a.reshape(-1)).cast("B"))
    t.data = data
    return t


def from_tensor(t) -> np.ndarray:
    """paam_msgs/Tensor → numpy array (a view on the message's bytes, no copy)."""
    dtype = np.dtype(t.dtype)
    shape = tuple(t.shape)
    count = 1
    for n in shape:
        count *= n
    expected = count * dtype.itemsize
    if len(t.data) != expected:
        raise ValueError(f"tensor of dtype {dtype} and shape {shape} needs {expected} bytes, "
                         f"got {len(t.data)}")
    if expected == 0:
        return np.zeros(shape, dtype)
    return np.frombuffer(t.data, dtype=dtype).reshape(shape)


def flatten_params(params: Mapping[str, Any]) -> tuple[list[str], list[float]]:
    """Keyword parameters as (names, float values); a ``params=(...)`` tuple becomes params.0..."""
    names, values = [], []
    for k, v in params.items():
        if v is None:
            continue
        if isinstance(v, (tuple, list)):
            for i, x in enumerate(v):
                names.append(f"{k}.{i}")
                values.append(float(x))
        else:
            names.append(k)
            values.append(float(v))
    return names, values


def unflatten_params(names, values) -> dict[str, Any]:
    """Inverse of :func:`flatten_params` (used by the bridge); tuple items come back as int."""
    out: dict[str, Any] = {}
    seqs: dict[str, dict[int, int]] = {}
    for name, value in zip(names, values):
        base, dot, idx = name.rpartition(".")
        if dot and idx.isdigit():
            seqs.setdefault(base, {})[int(idx)] = int(value)
        else:
            out[name] = float(value)
    for base, items in seqs.items():
        out[base] = tuple(items[i] for i in sorted(items))
    return out


def _error_classes() -> dict[str, type]:
    import paam
    import paam.errors as errors
    base = paam.PaamError
    out = {}
    for mod in (errors, paam):
        for name in dir(mod):
            cls = getattr(mod, name)
            if isinstance(cls, type) and issubclass(cls, base):
                out[cls.__name__] = cls
    return out


def error_class(kind: str) -> type:
    """The paam exception class named ``kind`` (``paam.PaamError`` when unknown)."""
    classes = _error_classes()
    return classes.get(kind) or classes["PaamError"]


def error_kind(exc: BaseException) -> str:
    """The name of the most specific paam error class of ``exc``; a plain ValueError (a
    malformed request) is ``InvalidArgument``, anything else ``PaamError``."""
    classes = _error_classes()
    for cls in type(exc).__mro__:
        if classes.get(cls.__name__) is cls:
            return cls.__name__
    if isinstance(exc, ValueError) and "InvalidArgument" in classes:
        return "InvalidArgument"
    return "PaamError"


def error_message(exc: BaseException) -> str:
    """The message of ``exc`` without the ``code:`` prefix that PaamError.__str__ adds."""
    if exc.args and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc) or type(exc).__name__
