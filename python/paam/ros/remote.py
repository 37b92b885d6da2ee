"""``paam.ros.RemoteClient``: the local client's API, for a process on another machine.

A RemoteClient registers through a ``paam bridge`` (reached over ROS 2) instead of a local
socket; the bridge holds the matching local registration with paamd. Its requests travel as
``paam_msgs/RemoteRequest`` messages and come back as ``RemoteResponse``. What matches
``paam.Client``:

* ``request(kernel, *inputs, timeout_sec=None, **params)``, ``submit(...) -> future`` with
  ``done()`` and ``result(timeout_sec=None)``, ``close()`` and the context manager;
* ``bucket``, ``admission_note``, ``last_timestamps``, ``priority``, ``kernels``, ``wait``,
  ``client_id``, ``closed``;
* the same exceptions (``paam.ServerNotRunning``, ``NotAdmitted``, ``UnknownKernel``,
  ``InputTooLarge``, ``KernelFailed``, ``ServerDied``, ``PaamTimeout``, ...), raised from the
  error the bridge reported.

What it lacks (all tied to a local registration with paamd): ``timestamps(kernel)``,
``input_buffer``, ``request_raw``, ``request_device``/``submit_device`` (and ``device_buffers``),
``buckets``, ``unit``, ``server_pid``, ``direct``.

What differs: inputs are copied into messages (no shared memory across machines); several
requests of one kernel may be outstanding (the bridge queues them in order; ``paam.Client`` raises
``Busy``); ``last_timestamps`` adds the bridge's receive/reply times (server host clock) and
``remote_sent``/``remote_received`` (this host's clock); ``client_id`` is the bridge's id.

Nothing hangs: no bridge answering within ``connect_timeout_sec`` raises :class:`BridgeNotRunning`
(a ``ServerNotRunning``); a bridge that stops publishing its status for ``bridge_timeout_sec``
while a request is outstanding raises ``ServerDied``; a bridge that no longer knows this client
(it retired the registration because the heartbeats stopped for longer than the lease, or it
restarted) says so, and the pending and all later requests raise :class:`ClientRetired` (a
``ServerDied``): create a new RemoteClient.

Each process shares one ROS 2 context, node and executor thread among its RemoteClients (its own
context, so it works whether or not the application uses rclpy, and from inside the
application's callbacks without deadlocking its executor).

Thread safety: request/submit may be called from several threads; close() must not race them.
"""
from __future__ import annotations

import array
import itertools
import os
import socket as socketlib
import threading
import time
import uuid as uuidlib
from typing import Any, Mapping, Optional

import numpy as np

from paam import errors
from paam.errors import ServerDied, ServerNotRunning
from paam.ros import wire
from paam.ros._waitset import SubscriptionWaiter, take

__all__ = ["RemoteClient", "RemoteFuture", "BridgeNotRunning", "ClientRetired"]


class BridgeNotRunning(ServerNotRunning):
    """Raised when no paam bridge of the given name answers on this ROS 2 domain."""
    code = "bridge_not_running"


class ClientRetired(ServerDied):
    """Raised when the bridge no longer holds this client's registration: it retired it (the
    client's heartbeats stopped for longer than the lease while the process lived on) or it
    restarted. The client cannot be used again; create a new one."""
    code = "client_retired"


class _Hub:
    """The process's ROS 2 side of all RemoteClients: a context, a node, an executor thread."""

    _lock = threading.Lock()
    _instance: Optional["_Hub"] = None
    _refs = 0

    @classmethod
    def acquire(cls) -> "_Hub":
        with cls._lock:
            if cls._instance is None:
                cls._instance = _Hub()
            cls._refs += 1
            return cls._instance

    @classmethod
    def release(cls) -> None:
        with cls._lock:
            cls._refs -= 1
            if cls._refs == 0 and cls._instance is not None:
                hub, cls._instance = cls._instance, None
                hub._shutdown()

    def __init__(self) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        self.context = Context()
        domain = os.environ.get("ROS_DOMAIN_ID")
        rclpy.init(context=self.context,
                   domain_id=int(domain) if domain and domain.isdigit() else None,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(f"paam_remote_{os.getpid()}_{uuidlib.uuid4().hex[:6]}",
                                      context=self.context)
        # Response subscriptions live on a node no executor spins: the thread waiting for a
        # response takes it itself (see paam.ros._waitset).
        self.data_node = rclpy.create_node(f"{self.node.get_name()}_data", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._status: dict[str, tuple[float, bool, str]] = {}
        self._status_subs: dict[str, Any] = {}
        self._status_lock = threading.Lock()
        self._thread = threading.Thread(target=self._spin, name="paam-remote-ros", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        from rclpy.executors import ExternalShutdownException, ShutdownException
        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.1)
        except (ExternalShutdownException, ShutdownException):
            pass
        except Exception:  # noqa: BLE001 - context torn down under us at shutdown
            if self.context.ok():
                raise

    def _shutdown(self) -> None:
        import rclpy
        try:
            rclpy.shutdown(context=self.context)
        except Exception:  # noqa: BLE001
            pass
        self._thread.join(timeout=5)
        self.executor.shutdown(timeout_sec=1)
        for node in (self.node, self.data_node):
            try:
                node.destroy_node()
            except Exception:  # noqa: BLE001
                pass

    def watch_bridge(self, bridge: str) -> None:
        """Follow ``bridge``'s status topic (its sign of life)."""
        from paam_msgs.msg import ServerStatus
        with self._status_lock:
            if bridge in self._status_subs:
                return

            def on_status(msg, bridge=bridge):
                with self._status_lock:
                    self._status[bridge] = (time.monotonic(), bool(msg.server_reachable),
                                            msg.message)
            self._status_subs[bridge] = self.node.create_subscription(
                ServerStatus, wire.topic(bridge, "status"), on_status, wire.status_qos())

    def bridge_silence(self, bridge: str, since: float) -> float:
        """Seconds since ``bridge`` last published its status (counted from ``since`` if never)."""
        with self._status_lock:
            seen = self._status.get(bridge)
        last = max(seen[0], since) if seen else since
        return time.monotonic() - last


class RemoteFuture:
    """The result of :meth:`RemoteClient.submit`."""

    def __init__(self, client: "RemoteClient", kernel: str, sequence: int) -> None:
        self.kernel = kernel
        self.sequence = sequence
        self._client = client
        self._event = threading.Event()
        self._value: Any = None
        self._error: Optional[BaseException] = None
        self.timestamps: dict[str, int] = {}

    def done(self) -> bool:
        """True when the response has arrived (result() would not block)."""
        if not self._event.is_set():
            self._client._poll()
            self._client._fail_if_retired(self)
        return self._event.is_set()

    def result(self, timeout_sec: Optional[float] = None) -> Any:
        """Wait for and return the result. ``None`` waits as long as the request takes (bounded
        if the bridge dies: ServerDied); ``0`` does not wait (PaamTimeout if not done; a
        response that has arrived is returned, as by ``paam.Client``). After a timeout the
        request stays outstanding and result() may be called again."""
        if not self._event.is_set():
            self._client._wait(self, timeout_sec)
        if self._error is not None:
            raise self._error
        return self._value

    def _resolve(self, value: Any, error: Optional[BaseException]) -> None:
        self._value, self._error = value, error
        self._event.set()


class RemoteClient:
    """One registration with a remote paamd, through its bridge. Mirrors ``paam.Client``.

    :param priority: chain priority; larger is more critical. Fixed at registration.
    :param kernels: kernel names, or name → max input bytes, or name → (max in, max out).
    :param wait: how this process waits for a response (``spin``: poll, ``suspend``: block,
        ``hybrid``: poll ``hybrid_spin_us`` then block), and how the bridge's local client waits
        for paamd.
    :param bridge: the bridge's name (``paam bridge --name``).
    :param timing: optional ``paam.TimingModel`` for the server's admission control.
    :param connect_timeout_sec: how long to wait for the bridge at registration.
    :param bridge_timeout_sec: a bridge silent this long while a request waits is dead.
    :param name: shown in the bridge's log.
    """

    def __init__(self, priority: int = 0, kernels: Any = ("spin",), *, wait: str = "suspend",
                 bridge: str = wire.DEFAULT_BRIDGE, timing: Any = None, name: str = "",
                 connect_timeout_sec: float = 5.0, bridge_timeout_sec: float = 3.0,
                 hybrid_spin_us: float = 20.0, callback_uuid: Optional[bytes] = None,
                 system_uuid: Optional[bytes] = None) -> None:
        from paam_msgs.msg import Heartbeat, KernelSpec, RemoteRequest, RemoteResponse
        from paam_msgs.srv import Register

        if wait not in ("spin", "suspend", "hybrid"):
            raise errors.InvalidArgument(f"wait must be spin, suspend or hybrid, not {wait!r}")
        self._bridge = bridge.strip("/")
        self._wait_mode = wait
        self._hybrid_spin_s = hybrid_spin_us * 1e-6
        self._bridge_timeout = float(bridge_timeout_sec)
        self._priority = int(priority)
        self._kernels = _kernel_decls(kernels)
        self._pending: dict[int, RemoteFuture] = {}
        self._pending_lock = threading.Lock()
        self._seq = itertools.count(1)
        self._closed = False
        self._retired: Optional[str] = None  # the bridge's reason, once it retired us
        self._last: Optional[RemoteFuture] = None
        self._hub = _Hub.acquire()
        try:
            self._register(Register, KernelSpec, timing, name, connect_timeout_sec,
                           callback_uuid, system_uuid)
            node = self._hub.node
            self._pub = node.create_publisher(RemoteRequest, self._request_topic, wire.data_qos())
            self._sub = self._hub.data_node.create_subscription(
                RemoteResponse, self._response_topic, lambda _msg: None, wire.data_qos())
            self._waiter = SubscriptionWaiter(self._hub.context)
            self._pump_lock = threading.Lock()
            self._hb_pub = node.create_publisher(Heartbeat, wire.topic(self._bridge, "heartbeat"),
                                                 wire.data_qos())
            self._Heartbeat = Heartbeat
            self._RemoteRequest = RemoteRequest
            self._hb_timer = node.create_timer(self._lease / 3.0, self._heartbeat)
            self._await_matched(connect_timeout_sec)
        except BaseException:
            self._closed = True
            self._teardown(unregister=getattr(self, "_client_id", None) is not None)
            raise

    # -- registration --------------------------------------------------------------------------

    def _register(self, Register, KernelSpec, timing, name, timeout, cb_uuid, sys_uuid) -> None:
        hub = self._hub
        hub.watch_bridge(self._bridge)
        cli = hub.node.create_client(Register, wire.topic(self._bridge, "register"))
        try:
            if not cli.wait_for_service(timeout_sec=timeout):
                raise BridgeNotRunning(
                    f"no paam bridge '{self._bridge}' answered within {timeout:g} s on ROS 2 "
                    f"domain {hub.context.get_domain_id()} (is `paam bridge` running there, "
                    "with the same ROS_DOMAIN_ID and discovery range?)")
            req = Register.Request()
            req.chain_priority = self._priority
            req.callback_uuid = array.array("B", cb_uuid or uuidlib.uuid4().bytes)
            req.system_uuid = array.array("B", sys_uuid or _system_uuid())
            req.pid = os.getpid()
            req.hostname = socketlib.gethostname()
            req.node_name = name or hub.node.get_fully_qualified_name()
            req.kernels = [KernelSpec(name=k, max_in_bytes=i, max_out_bytes=o)
                           for k, (i, o) in self._kernels.items()]
            req.wait = self._wait_mode
            if timing is not None:
                req.has_timing = True
                _fill_timing(req.timing, timing)
            fut = cli.call_async(req)
            done = threading.Event()
            fut.add_done_callback(lambda _f: done.set())
            if not done.wait(timeout) and not fut.done():
                cli.remove_pending_request(fut)
                raise BridgeNotRunning(f"paam bridge '{self._bridge}' did not answer the "
                                       f"registration within {timeout:g} s")
            resp = fut.result()
        finally:
            hub.node.destroy_client(cli)
        if not resp.admitted:
            raise wire.error_class(resp.error_kind)(resp.message)
        self._client_id = int(resp.client_id)
        self._bucket = int(resp.bucket)
        self._note = resp.message
        self._lease = float(resp.lease_sec) or wire.DEFAULT_LEASE_SEC
        self._request_topic = resp.request_topic
        self._response_topic = resp.response_topic

    def _await_matched(self, timeout: float) -> None:
        """Wait until the bridge's ends of both topics are matched (DDS discovery)."""
        deadline = time.monotonic() + timeout
        node = self._hub.node
        while (self._pub.get_subscription_count() == 0
               or node.count_publishers(self._response_topic) == 0):
            if time.monotonic() > deadline:
                raise BridgeNotRunning(f"paam bridge '{self._bridge}' registered client "
                                       f"{self._client_id} but its topics did not match within "
                                       f"{timeout:g} s")
            time.sleep(0.002)

    def _heartbeat(self) -> None:
        if not self._closed and self._retired is None:
            self._hb_pub.publish(self._Heartbeat(client_id=self._client_id,
                                                 stamp_ns=time.monotonic_ns()))

    # -- requests ------------------------------------------------------------------------------

    def request(self, kernel: str, *inputs: Any, timeout_sec: Optional[float] = None,
                **params: Any) -> Any:
        """Run ``kernel`` on ``inputs`` on the remote accelerator and return its result."""
        return self.submit(kernel, *inputs, **params).result(timeout_sec=timeout_sec)

    def submit(self, kernel: str, *inputs: Any, **params: Any) -> RemoteFuture:
        """Send a request and return a :class:`RemoteFuture` at once."""
        if self._closed:
            raise errors.Closed("client is closed")
        if self._retired is not None:
            raise ClientRetired(self._retired)
        if kernel not in self._kernels:
            raise errors.UnknownKernel(f"'{kernel}' was not declared at registration "
                                       f"(declared: {', '.join(self._kernels)})")
        from paam_msgs.msg import Tensor
        msg = self._RemoteRequest()
        msg.client_id = self._client_id
        msg.kernel = kernel
        msg.inputs = [wire.to_tensor(_as_array(x), Tensor) for x in inputs]
        names, values = wire.flatten_params(params)
        msg.param_names = names
        msg.param_values = array.array("d", values)
        seq = next(self._seq)
        msg.sequence = seq
        fut = RemoteFuture(self, kernel, seq)
        fut.timestamps["remote_sent"] = time.monotonic_ns()
        with self._pending_lock:
            self._pending[seq] = fut
        self._pub.publish(msg)
        self._last = fut
        return fut

    def _on_response(self, msg) -> None:
        now = time.monotonic_ns()
        if msg.sequence == 0:
            # Sequences start at 1: 0 is the bridge's notice that it does not know this client.
            if not msg.ok:
                self._on_retired(msg.message or "the bridge retired this client")
            return
        with self._pending_lock:
            fut = self._pending.pop(int(msg.sequence), None)
        if fut is None:
            return
        stamps = fut.timestamps
        stamps.update(zip(msg.timestamp_names, (int(v) for v in msg.timestamp_ns)))
        stamps["bridge_received"] = int(msg.bridge_received_ns)
        stamps["bridge_replied"] = int(msg.bridge_replied_ns)
        stamps["remote_received"] = now
        if msg.ok:
            outs = [wire.from_tensor(t) for t in msg.outputs]
            outs = [o.item() if o.ndim == 0 else o for o in outs]
            value = None if not outs else outs[0] if len(outs) == 1 else tuple(outs)
            fut._resolve(value, None)
        else:
            fut._resolve(None, wire.error_class(msg.error_kind)(msg.message))

    def _on_retired(self, reason: str) -> None:
        """The bridge dropped our registration: fail what is pending, refuse what comes."""
        with self._pending_lock:
            if self._retired is None:
                self._retired = (f"{reason} (paam bridge '{self._bridge}', "
                                 f"client {self._client_id}); create a new RemoteClient")
            pending, self._pending = list(self._pending.values()), {}
        for fut in pending:
            fut._resolve(None, ClientRetired(self._retired))

    def _fail_if_retired(self, fut: RemoteFuture) -> bool:
        """Resolve ``fut`` with ClientRetired if the bridge retired us (a request that raced
        with the notice); True if it did."""
        if self._retired is None or fut._event.is_set():
            return False
        with self._pending_lock:
            self._pending.pop(fut.sequence, None)
        fut._resolve(None, ClientRetired(self._retired))
        return True

    def _take_one(self) -> None:
        """Take one waiting response (the next wait reports any further one); REQUIRES:
        _pump_lock held."""
        msg = take(self._sub)
        if msg is not None:
            self._on_response(msg)

    def _poll(self) -> None:
        """Collect responses that already arrived, without waiting."""
        if self._closed or not self._pump_lock.acquire(blocking=False):
            return
        try:
            while self._waiter.wait([self._sub], 0.0):
                self._take_one()
        finally:
            self._pump_lock.release()

    def _wait(self, fut: RemoteFuture, timeout_sec: Optional[float]) -> None:
        """Wait for ``fut``: the thread that holds the pump lock waits on the response
        subscription and resolves whichever futures its messages answer; other waiting threads
        wait on their own future and take the pump over when it is free."""
        start = time.monotonic()
        deadline = None if timeout_sec is None else start + max(0.0, timeout_sec)
        spin_until = start + (self._hybrid_spin_s if self._wait_mode == "hybrid" else
                              float("inf") if self._wait_mode == "spin" else 0.0)
        while not fut._event.is_set():
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                self._poll()  # a response that has already arrived is not a timeout
                if fut._event.is_set() or self._fail_if_retired(fut):
                    return
                raise errors.PaamTimeout(f"'{fut.kernel}' has not completed")
            if self._closed:
                raise errors.Closed("client was closed while waiting")
            if self._fail_if_retired(fut):
                return
            silent = self._hub.bridge_silence(self._bridge, start)
            if silent > self._bridge_timeout:
                with self._pending_lock:
                    self._pending.pop(fut.sequence, None)
                fut._resolve(None, errors.ServerDied(
                    f"paam bridge '{self._bridge}' silent for {silent:.1f} s while "
                    f"'{fut.kernel}' was outstanding"))
                return
            if not self._pump_lock.acquire(blocking=False):
                fut._event.wait(0.001)  # another thread pumps; it resolves us too
                continue
            try:
                if fut._event.is_set():
                    break
                # spin: poll; suspend: block in the wait set (GIL released), at most 0.1 s at a
                # time so that timeouts and the bridge's liveness are checked.
                step = 0.0 if now < spin_until else 0.1
                if deadline is not None:
                    step = min(step, max(0.0, deadline - now))
                if self._waiter.wait([self._sub], step):
                    self._take_one()
            finally:
                self._pump_lock.release()

    # -- introspection -------------------------------------------------------------------------

    @property
    def priority(self) -> int:
        return self._priority

    @property
    def bucket(self) -> int:
        """Bucket the remote server assigned at registration (0 = highest)."""
        return self._bucket

    @property
    def admission_note(self) -> str:
        return self._note

    @property
    def client_id(self) -> int:
        """The bridge's id of this registration."""
        return self._client_id

    @property
    def kernels(self) -> list[str]:
        return list(self._kernels)

    @property
    def wait(self) -> str:
        return self._wait_mode

    @property
    def bridge(self) -> str:
        return self._bridge

    @property
    def retired(self) -> bool:
        """True once the bridge said it no longer holds this registration (every request then
        raises :class:`ClientRetired`)."""
        return self._retired is not None

    @property
    def last_timestamps(self) -> dict[str, int]:
        """Timestamps of the most recent request (ns; server stages and bridge_* on the server
        host's CLOCK_MONOTONIC, remote_* on this host's)."""
        return {} if self._last is None else dict(self._last.timestamps)

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        """Unregister from the bridge and fail outstanding requests. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._teardown(unregister=self._retired is None)

    @property
    def closed(self) -> bool:
        return self._closed

    def _teardown(self, unregister: bool) -> None:
        hub = self._hub
        if hub is None:
            return
        self._hub = None
        if unregister and hub.context.ok():
            _unregister(hub, self._bridge, self._client_id)
        waiter = getattr(self, "_waiter", None)
        if waiter is not None:
            waiter.wake()
            with self._pump_lock:  # no thread is inside the wait set any more
                waiter.destroy()
        for attr, destroy in (("_hb_timer", hub.node.destroy_timer),
                              ("_sub", hub.data_node.destroy_subscription),
                              ("_pub", hub.node.destroy_publisher),
                              ("_hb_pub", hub.node.destroy_publisher)):
            ent = getattr(self, attr, None)
            if ent is not None:
                try:
                    destroy(ent)
                except Exception:  # noqa: BLE001
                    pass
        with self._pending_lock:
            pending, self._pending = list(self._pending.values()), {}
        for fut in pending:
            fut._resolve(None, errors.Closed("client closed"))
        _Hub.release()

    def __enter__(self) -> "RemoteClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"bucket {getattr(self, '_bucket', '?')}"
        return (f"<paam.ros.RemoteClient priority={self._priority} via '{self._bridge}' {state} "
                f"kernels={list(self._kernels)}>")


# -- helpers -----------------------------------------------------------------------------------

def _kernel_decls(kernels: Any) -> dict[str, tuple[int, int]]:
    """Kernel declarations as name → (max_in, max_out); 0 lets the server side choose."""
    out: dict[str, tuple[int, int]] = {}
    if isinstance(kernels, str):
        kernels = [kernels]
    items = kernels.items() if isinstance(kernels, Mapping) else ((k, None) for k in kernels)
    for name, size in items:
        if size is None:
            out[name] = (0, 0)
        elif isinstance(size, int):
            out[name] = (size, 0)
        else:
            out[name] = (int(size[0]), int(size[1]))
    return out


def _as_array(x: Any) -> np.ndarray:
    if isinstance(x, (bytes, bytearray, memoryview)):
        return np.frombuffer(memoryview(x).cast("B"), dtype=np.uint8)
    return np.asarray(x)


def _fill_timing(msg, t: Any) -> None:
    msg.chain = str(t.chain)
    msg.callback_index = int(t.callback_index)
    msg.chain_length = int(t.chain_length)
    msg.period_ms = float(t.period_ms)
    msg.deadline_ms = float(t.deadline_ms)
    msg.cpu_wcet_ms = float(t.cpu_wcet_ms)
    msg.segments_ms = array.array("d", [float(s) for s in t.segments_ms])
    msg.executor = str(t.executor)
    msg.executor_cpu = int(t.executor_cpu)
    msg.executor_priority = int(t.executor_priority)
    msg.executor_wait = str(t.executor_wait)
    msg.best_effort = bool(getattr(t, "best_effort", False))


def _system_uuid() -> bytes:
    """A stable id of this machine (from /etc/machine-id when there is one)."""
    try:
        with open("/etc/machine-id") as f:
            return uuidlib.UUID(f.read().strip()).bytes
    except (OSError, ValueError):
        return uuidlib.uuid5(uuidlib.NAMESPACE_DNS, socketlib.gethostname()).bytes


def _unregister(hub: _Hub, bridge: str, client_id: int, timeout: float = 1.0) -> None:
    """Best effort: tell the bridge we leave (it would reap us after the lease anyway)."""
    from paam_msgs.srv import Unregister
    cli = hub.node.create_client(Unregister, wire.topic(bridge, "unregister"))
    try:
        if cli.service_is_ready() or cli.wait_for_service(timeout_sec=timeout):
            fut = cli.call_async(Unregister.Request(client_id=client_id))
            done = threading.Event()
            fut.add_done_callback(lambda _f: done.set())
            done.wait(timeout)
    except Exception:  # noqa: BLE001
        pass
    finally:
        try:
            hub.node.destroy_client(cli)
        except Exception:  # noqa: BLE001
            pass
