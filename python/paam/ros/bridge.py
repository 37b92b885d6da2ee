"""``paam bridge``: processes on other machines reach this machine's paamd over ROS 2.

The bridge is a ROS 2 node beside ``paamd``. A remote callback registers through the
``Register`` service; the bridge registers it with the local server as a ``paam.Client`` with
the remote chain's priority, kernels and timing model (so the server's admission control and
bucket mapping treat it like a local client), and answers with the registration's pair of topics.
Requests arriving on that registration's request topic are submitted through its local client —
with the priority fixed at registration; a request cannot change it — and results are published
on its response topic. See :mod:`paam.ros.wire` for names and messages.

Scheduling inside the bridge, PiCAS-style: a dispatcher thread waits on the request
subscriptions of all registrations and, each time it picks, re-polls readiness and takes the
next request of the highest-priority registration that has one (FIFO among equal priorities, by
registration), so when requests of several chains are waiting the most critical is submitted
first. The dispatcher never waits for the accelerator: each submitted request is collected by a
waiter thread (a pool), which publishes the response and submits that registration's next queued
request for the same kernel (paam allows one outstanding request per kernel and client). The
control plane (registration, heartbeats, status, reaping) runs in a :class:`PicasExecutor` on a
separate thread, so the data path never waits behind rclpy's executor machinery.

Remote clients that vanish: each must send a Heartbeat at least every ``lease_sec / 3``; one
silent for longer than ``lease_sec`` is reaped — its local client is closed (after its in-flight
requests end), its request topic is destroyed and its queued requests dropped — as paamd reaps a
dead local process.

Remote clients that are not dead after all (heartbeats paused past the lease, or a bridge that
restarted and never knew them): the bridge tells them. It publishes a *notice* — a
``RemoteResponse`` with ``sequence`` 0 (real requests count from 1), ``ok`` false and the reason
in ``message`` — on the client's response topic when it reaps the client, and again for every
heartbeat that arrives with an id it does not hold (keeping a reaped client's response publisher
for that; creating one for an id it never saw). The RemoteClient then fails its pending and later
requests with ``paam.ros.remote.ClientRetired``. Such tombstones last until the id's heartbeats
stop for ``max(5 * lease_sec, 10 s)``; at most :data:`MAX_TOMBSTONES` are kept.

Thread safety: construct, spin and close from one thread; the waiter threads only touch a
registration under its lock.
"""
from __future__ import annotations

import array
import collections
import concurrent.futures
import itertools
import os
import secrets
import socket as socketlib
import sys
import threading
import time
import uuid as uuidlib
from typing import Any, Callable, Optional

from paam.ros import wire
from paam.ros._waitset import SubscriptionWaiter, take

__all__ = ["Bridge", "main"]

# Client ids the bridge remembers after dropping them (to answer their heartbeats), at most.
MAX_TOMBSTONES = 256

RETIRED_REASON = "the bridge retired this client: its heartbeats stopped for longer than the lease"


class _Tombstone:
    """A client id the bridge no longer holds: where to tell it so (``pub``; None after a
    deliberate unregister: nothing to tell), why, and when its last heartbeat came."""

    def __init__(self, pub, reason: str) -> None:
        self.pub = pub
        self.reason = reason
        self.last_heard = time.monotonic()


class _Registration:
    """One remote callback: its local paam client and its topics."""

    def __init__(self, client_id: int, client: Any, priority: int, describe: str) -> None:
        self.client_id = client_id
        self.client = client
        self.priority = priority
        self.describe = describe
        self.lock = threading.Lock()
        self.queues: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self.inflight = 0
        self.closing = False
        self.closed = False
        self.last_seen = time.monotonic()
        self.sub = None
        self.pub = None
        self.matched = False  # the response publisher has seen the remote subscription
        self.order = 0  # registration order: FIFO among equal priorities


class Bridge:
    """The bridge node. :meth:`spin` (or :meth:`start` for a background thread), then :meth:`close`.

    :param name: the bridge's node name and the prefix of its services and topics.
    :param socket: paamd's socket (default: ``$PAAM_SOCKET`` or ``paam.default_socket_path()``).
    :param lease_sec: a remote client silent for this long is reaped.
    :param context: rclpy context (``None``: the default; rclpy must be initialised).
    :param client_factory: makes the local client; default ``paam.Client`` (tests may pass
        another callable with the same keyword arguments).
    :param waiters: waiter threads, i.e. requests that can be in flight at once across all
        registrations; more queue in the pool.
    :param wait: how the bridge's waiter threads wait for paamd (spin | suspend | hybrid).
        A bridge-host choice: how a remote callback waits for its response is up to the remote
        client. Default hybrid: short requests complete while the waiter still spins (no wake-up
        latency), long ones cost no CPU.
    :param log: where the bridge's log lines go (default: stderr).
    :param diagnostics: publish paamd's statistics on ``/diagnostics`` once a second
        (:mod:`paam.ros.diagnostics`).
    """

    def __init__(self, *, name: str = wire.DEFAULT_BRIDGE, socket: Optional[str] = None,
                 lease_sec: float = wire.DEFAULT_LEASE_SEC, context=None,
                 client_factory: Optional[Callable[..., Any]] = None, waiters: int = 64,
                 wait: str = "hybrid", inline_wait_us: float = 100.0,
                 log: Optional[Callable[[str], None]] = None, diagnostics: bool = True) -> None:
        from rclpy.node import Node

        from paam.ros.executor import PicasExecutor
        from paam_msgs.msg import Heartbeat, ServerStatus
        from paam_msgs.srv import Register, Unregister

        if lease_sec <= 0:
            raise ValueError("lease_sec must be positive")
        if wait not in ("spin", "suspend", "hybrid"):
            raise ValueError(f"wait must be spin, suspend or hybrid, not {wait!r}")
        self.wait = wait
        self.inline_wait_sec = max(0.0, inline_wait_us) * 1e-6
        self.name = name.strip("/")
        self.lease_sec = float(lease_sec)
        self.socket_path = socket or _default_socket()
        self._client_factory = client_factory
        self._log = log or (lambda line: print(f"[{self.name}] {line}", file=sys.stderr,
                                               flush=True))
        self._regs: dict[int, _Registration] = {}
        self._regs_lock = threading.Lock()
        # Ids dropped (reaped, unregistered) or never known, oldest first; control plane only.
        self._tombstones: "collections.OrderedDict[int, _Tombstone]" = collections.OrderedDict()
        self._tombstone_keep_sec = max(5.0 * self.lease_sec, 10.0)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=waiters, thread_name_prefix="paam-bridge-wait")
        self.requests_served = 0
        self.requests_failed = 0
        self.clients_reaped = 0
        self._counter_lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._closed = False

        self.node = Node(self.name, context=context)
        # Request subscriptions live on a node no executor spins; the dispatcher takes them.
        self.data_node = Node(f"{self.name}_data", context=self.node.context)
        self._waiter = SubscriptionWaiter(self.node.context)
        self._dispatcher = threading.Thread(target=self._dispatch, name=f"{self.name}-dispatch",
                                            daemon=True)
        self._order = itertools.count()
        self.executor = PicasExecutor(context=self.node.context)
        self.executor.add_node(self.node)
        n = self.node
        # Control plane at the top priority: registration and heartbeats are cheap and must not
        # wait behind a burst of requests.
        top = 1 << 30
        srv = n.create_service(Register, wire.topic(self.name, "register"), self._on_register)
        self.executor.set_callback_priority(srv, top)
        srv = n.create_service(Unregister, wire.topic(self.name, "unregister"),
                               self._on_unregister)
        self.executor.set_callback_priority(srv, top)
        sub = n.create_subscription(Heartbeat, wire.topic(self.name, "heartbeat"),
                                    self._on_heartbeat, wire.data_qos())
        self.executor.set_callback_priority(sub, top)
        self._status_pub = n.create_publisher(ServerStatus, wire.topic(self.name, "status"),
                                              wire.status_qos())
        self._ServerStatus = ServerStatus
        self._status_timer = n.create_timer(wire.STATUS_PERIOD_SEC, self._publish_status)
        self._reap_timer = n.create_timer(self.lease_sec / 4, self._reap)
        self._diagnostics = _start_diagnostics(n, self.socket_path, self._log) \
            if diagnostics else None
        self._dispatcher.start()
        self._log(f"bridging ROS 2 domain {n.context.get_domain_id()} to paamd at "
                  f"{self.socket_path} (lease {self.lease_sec:g} s)")

    # -- lifecycle -----------------------------------------------------------------------------

    def spin(self) -> None:
        """Serve until the context shuts down or :meth:`close` is called."""
        from rclpy.executors import ExternalShutdownException
        try:
            self.executor.spin()
        except ExternalShutdownException:
            pass

    def start(self) -> "Bridge":
        """Serve from a background thread."""
        self._thread = threading.Thread(target=self.spin, name=f"{self.name}-spin", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, close every local client and destroy the node. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._diagnostics is not None:
            self._diagnostics.close()
        self._waiter.wake()
        self._dispatcher.join(timeout=5.0)
        self.executor.shutdown(timeout_sec=2.0)
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        with self._regs_lock:
            regs = list(self._regs.values())
            self._regs.clear()
        for reg in regs:
            self._retire(reg, "bridge closing")
        for tomb in self._tombstones.values():
            self._destroy_pub(tomb.pub)
        self._tombstones.clear()
        self._pool.shutdown(wait=True, cancel_futures=False)
        for reg in regs:
            self._close_client(reg)
        self._waiter.destroy()
        self.data_node.destroy_node()
        self.node.destroy_node()

    def __enter__(self) -> "Bridge":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def registrations(self) -> int:
        with self._regs_lock:
            return len(self._regs)

    # -- control plane -------------------------------------------------------------------------

    def _make_client(self, req) -> Any:
        kernels: dict[str, Any] = {}
        for k in req.kernels:
            max_in, max_out = int(k.max_in_bytes), int(k.max_out_bytes)
            if not max_in and not max_out:
                kernels[k.name] = None            # the kernel's default capacities
            elif not max_out:
                kernels[k.name] = max_in          # paam.Client picks the output capacity
            else:
                if not max_in:
                    from paam.kernels import spec_for
                    max_in = spec_for(k.name).max_input
                kernels[k.name] = (max_in, max_out)
        kw: dict[str, Any] = {"priority": int(req.chain_priority), "kernels": kernels,
                              "wait": self.wait, "socket": self.socket_path,
                              "name": f"ros:{req.node_name or '?'}@{req.hostname or '?'}:{req.pid}"}
        if req.has_timing:
            import paam
            t = req.timing
            kw["timing"] = paam.TimingModel(
                chain=t.chain, callback_index=int(t.callback_index),
                chain_length=int(t.chain_length), period_ms=float(t.period_ms),
                deadline_ms=float(t.deadline_ms), cpu_wcet_ms=float(t.cpu_wcet_ms),
                segments_ms=[float(s) for s in t.segments_ms], executor=t.executor,
                executor_cpu=int(t.executor_cpu), executor_priority=int(t.executor_priority),
                executor_wait=t.executor_wait,
                best_effort=bool(t.best_effort))
        factory = self._client_factory
        if factory is None:
            import paam
            factory = paam.Client
        return factory(**kw)

    def _on_register(self, req, resp):
        from paam_msgs.msg import RemoteRequest, RemoteResponse

        who = (f"{req.node_name or '?'} pid {req.pid} on {req.hostname or '?'} "
               f"(callback {uuidlib.UUID(bytes=bytes(req.callback_uuid))})")
        resp.lease_sec = self.lease_sec
        if req.wait and req.wait not in ("spin", "suspend", "hybrid"):
            resp.admitted, resp.error_kind = False, "PaamError"
            resp.message = f"wait must be spin, suspend or hybrid, not {req.wait!r}"
            return resp
        try:
            client = self._make_client(req)
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the remote client
            resp.admitted = False
            resp.error_kind = wire.error_kind(exc)
            resp.message = wire.error_message(exc)
            self._log(f"registration of {who} at priority {req.chain_priority} refused: "
                      f"{resp.error_kind}: {exc}")
            return resp
        client_id = secrets.randbits(63)
        reg = _Registration(client_id, client, int(req.chain_priority), who)
        reg.order = next(self._order)
        reg.pub = self.data_node.create_publisher(
            RemoteResponse, wire.response_topic(self.name, client_id), wire.data_qos())
        reg.sub = self.data_node.create_subscription(
            RemoteRequest, wire.request_topic(self.name, client_id), lambda _msg: None,
            wire.data_qos())
        with self._regs_lock:
            self._regs[client_id] = reg
        self._waiter.wake()  # the dispatcher waits on the new subscription from now on
        resp.admitted = True
        resp.client_id = client_id
        resp.bucket = int(getattr(client, "bucket", -1) or 0)
        resp.message = str(getattr(client, "admission_note", "") or "")
        resp.request_topic = wire.request_topic(self.name, client_id)
        resp.response_topic = wire.response_topic(self.name, client_id)
        self._log(f"registered {who}: client {client_id}, priority {reg.priority}, "
                  f"bucket {resp.bucket}, waits by {req.wait or '?'}")
        return resp

    def _on_unregister(self, req, resp):
        cid = int(req.client_id)
        with self._regs_lock:
            reg = self._regs.pop(cid, None)
        if reg is not None or cid in self._tombstones:
            # Late heartbeats of a client that left on purpose get no notice.
            self._bury(cid, None, "unregistered")
        if reg is None:
            resp.ok, resp.message = False, f"no registration {req.client_id}"
            return resp
        self._retire(reg, "unregistered")
        resp.ok, resp.message = True, "unregistered"
        return resp

    def _on_heartbeat(self, msg) -> None:
        cid = int(msg.client_id)
        with self._regs_lock:
            reg = self._regs.get(cid)
        if reg is not None:
            reg.last_seen = time.monotonic()
            return
        # A live client the bridge does not hold (reaped, or from before a restart): tell it.
        tomb = self._tombstones.get(cid)
        if tomb is None:
            from paam_msgs.msg import RemoteResponse
            try:
                pub = self.data_node.create_publisher(
                    RemoteResponse, wire.response_topic(self.name, cid), wire.data_qos())
            except Exception as exc:  # noqa: BLE001 - node going away
                self._log(f"heartbeat of unknown client {cid}: cannot answer: {exc}")
                return
            tomb = self._bury(cid, pub, f"the bridge has no registration of this client "
                                        f"(it restarted, or retired the client more than "
                                        f"{self._tombstone_keep_sec:g} s ago)")
            self._log(f"heartbeat of unknown client {cid}: telling it it is not registered")
        tomb.last_heard = time.monotonic()
        self._notify(tomb)

    def _bury(self, client_id: int, pub, reason: str) -> _Tombstone:
        """Remember ``client_id`` as gone (replacing an earlier tombstone), oldest evicted."""
        old = self._tombstones.pop(client_id, None)
        if old is not None and old.pub is not pub:
            self._destroy_pub(old.pub)
        while len(self._tombstones) >= MAX_TOMBSTONES:
            _cid, evicted = self._tombstones.popitem(last=False)
            self._destroy_pub(evicted.pub)
        tomb = self._tombstones[client_id] = _Tombstone(pub, reason)
        return tomb

    def _notify(self, tomb: _Tombstone) -> None:
        """Publish ``tomb``'s notice (sequence 0, not ok) on the client's response topic; lost
        when the publisher has not matched the client yet, sent again at its next heartbeat."""
        if tomb.pub is None:
            return
        from paam_msgs.msg import RemoteResponse
        msg = RemoteResponse()
        msg.sequence = 0
        msg.ok = False
        msg.error_kind = "ServerDied"
        msg.message = tomb.reason
        msg.bridge_replied_ns = time.monotonic_ns()
        try:
            tomb.pub.publish(msg)
        except Exception:  # noqa: BLE001 - publisher destroyed under us
            pass

    def _destroy_pub(self, pub) -> None:
        if pub is not None:
            try:
                self.data_node.destroy_publisher(pub)
            except Exception:  # noqa: BLE001 - node may be going away
                pass

    def _reap(self) -> None:
        now = time.monotonic()
        with self._regs_lock:
            dead = [r for r in self._regs.values() if now - r.last_seen > self.lease_sec]
            for r in dead:
                del self._regs[r.client_id]
        for r in dead:
            with self._counter_lock:
                self.clients_reaped += 1
            silent = now - r.last_seen
            pub = self._retire(r, f"silent for {silent:.1f} s (lease {self.lease_sec:g} s)",
                               keep_pub=True)
            # Dead, or alive with its heartbeats paused: the notice tells it in the second case.
            self._notify(self._bury(r.client_id, pub, f"{RETIRED_REASON} (no heartbeat for "
                                                      f"{silent:.1f} s, lease "
                                                      f"{self.lease_sec:g} s)"))
        for cid in [cid for cid, t in self._tombstones.items()
                    if now - t.last_heard > self._tombstone_keep_sec]:
            self._destroy_pub(self._tombstones.pop(cid).pub)

    def _retire(self, reg: _Registration, why: str, *, keep_pub: bool = False):
        """Stop taking requests for ``reg``; close its client once nothing is in flight.
        Returns its response publisher if ``keep_pub`` (the caller owns it then), else None."""
        with reg.lock:
            reg.closing = True
            for q in reg.queues.values():
                q.clear()
            idle = reg.inflight == 0
            pub, reg.pub = reg.pub, None
        self._waiter.wake()
        if reg.sub is not None:
            try:
                self.data_node.destroy_subscription(reg.sub)
            except Exception:  # noqa: BLE001 - node may be going away
                pass
        if not keep_pub:
            self._destroy_pub(pub)
            pub = None
        self._log(f"client {reg.client_id} ({reg.describe}) retired: {why}")
        if idle:
            self._close_client(reg)
        return pub

    def _close_client(self, reg: _Registration) -> None:
        with reg.lock:
            if reg.closed:
                return
            reg.closed = True
        try:
            reg.client.close()
        except Exception as exc:  # noqa: BLE001
            self._log(f"closing client {reg.client_id}: {exc}")

    def _publish_status(self) -> None:
        msg = self._ServerStatus()
        msg.bridge_name = self.name
        msg.socket_path = self.socket_path
        msg.server_reachable, msg.message = _probe(self.socket_path)
        msg.remote_clients = self.registrations
        with self._counter_lock:
            msg.requests_served = self.requests_served
            msg.requests_failed = self.requests_failed
            msg.clients_reaped = self.clients_reaped
        msg.stamp_ns = time.monotonic_ns()
        self._status_pub.publish(msg)

    # -- data plane ----------------------------------------------------------------------------

    def _dispatch(self) -> None:
        """Take requests, the highest-priority registration's first, until the bridge closes."""
        poll = False
        while not self._closed:
            with self._regs_lock:
                regs = sorted(self._regs.values(), key=lambda r: (-r.priority, r.order))
            try:
                # After taking a request, poll (fresh readiness for the next pick); when idle,
                # block until a request arrives or the registrations change.
                ready = self._waiter.wait([r.sub for r in regs], 0.0 if poll else 1.0)
            except Exception as exc:  # noqa: BLE001 - context shut down under us
                if not self._closed:
                    self._log(f"dispatcher stopped: {exc}")
                return
            poll = False
            if not ready:
                continue
            ready_ids = {id(sub) for sub in ready}
            for reg in regs:  # highest priority first
                if id(reg.sub) in ready_ids:
                    msg = take(reg.sub)
                    if msg is not None:
                        self._on_request(reg, msg)
                        poll = True
                    break

    def _on_request(self, reg: _Registration, msg) -> None:
        received = time.monotonic_ns()
        with reg.lock:
            if reg.closing:
                return
            reg.last_seen = time.monotonic()
            q = reg.queues[msg.kernel]
            q.append((msg, received))
            if len(q) > 1:
                return  # the request in flight for this kernel submits this one when done
            reg.inflight += 1
        self._run(reg, (msg, received), in_dispatcher=True)

    def _run(self, reg: _Registration, item, *, in_dispatcher: bool) -> None:
        """Submit ``item`` and the requests queued behind it for the same kernel.

        REQUIRES: ``item`` is at the head of its kernel's queue and counted in ``reg.inflight``.
        In the dispatcher, a request gets ``inline_wait_sec`` to complete before a waiter thread
        takes it over (short kernels then cost no thread handoff, and the dispatcher is held up
        at most that long); a waiter thread waits as long as the request takes.
        """
        timeout_cls = getattr(_paam(), "PaamTimeout", TimeoutError)
        while item is not None:
            msg, received = item
            try:
                inputs = [wire.from_tensor(t) for t in msg.inputs]
                params = wire.unflatten_params(msg.param_names, msg.param_values)
                fut = reg.client.submit(msg.kernel, *inputs, **params)
            except Exception as exc:  # noqa: BLE001 - goes back to the remote client
                item = self._complete(reg, msg, received, None, exc)
                continue
            try:
                out = fut.result(timeout_sec=self.inline_wait_sec if in_dispatcher else None)
            except timeout_cls:
                self._pool.submit(self._collect, reg, msg, received, fut)
                return
            except Exception as exc:  # noqa: BLE001
                item = self._complete(reg, msg, received, None, exc)
            else:
                item = self._complete(reg, msg, received, out, None)

    def _collect(self, reg: _Registration, msg, received: int, fut) -> None:
        try:
            out = fut.result()
        except Exception as exc:  # noqa: BLE001
            nxt = self._complete(reg, msg, received, None, exc)
        else:
            nxt = self._complete(reg, msg, received, out, None)
        if nxt is not None:
            self._run(reg, nxt, in_dispatcher=False)

    def _complete(self, reg: _Registration, msg, received: int, out, exc):
        """Publish the response to ``msg``; return the next queued request of its kernel (now
        at the head of the queue and still counted in flight), or None."""
        from paam_msgs.msg import RemoteResponse, Tensor

        resp = RemoteResponse()
        resp.sequence = msg.sequence
        resp.bridge_received_ns = received
        if exc is None:
            resp.ok = True
            outs = out if isinstance(out, (tuple, list)) else ([] if out is None else [out])
            resp.outputs = [wire.to_tensor(o, Tensor) for o in outs]
            # Exact: this registration's requests of one kernel are serialized by its queue.
            per_kernel = getattr(reg.client, "timestamps", None)
            stamps = (per_kernel(msg.kernel) if callable(per_kernel)
                      else getattr(reg.client, "last_timestamps", None)) or {}
            resp.timestamp_names = list(stamps)
            resp.timestamp_ns = array.array("q", (int(v) for v in stamps.values()))
        else:
            resp.ok = False
            resp.error_kind = wire.error_kind(exc)
            resp.message = wire.error_message(exc)
        with self._counter_lock:
            if exc is None:
                self.requests_served += 1
            else:
                self.requests_failed += 1
        resp.bridge_replied_ns = time.monotonic_ns()
        with reg.lock:
            pub = None if reg.closing else reg.pub
        if pub is not None:
            try:
                if not reg.matched:
                    # A volatile reliable writer drops what it publishes before it has matched
                    # the reader; the remote client subscribed before sending, so this is short.
                    deadline = time.monotonic() + 5.0
                    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
                        time.sleep(0.001)
                    reg.matched = True
                pub.publish(resp)
            except Exception:  # noqa: BLE001 - publisher destroyed by a concurrent reap
                pass
        # Next request for this kernel, or close a retired registration once idle.
        nxt = None
        with reg.lock:
            q = reg.queues.get(msg.kernel)
            if q:
                q.popleft()
                if q and not reg.closing:
                    nxt = q[0]
            if nxt is None:
                reg.inflight -= 1
            close_now = reg.closing and reg.inflight == 0
        if close_now:
            self._close_client(reg)
        return nxt


def _start_diagnostics(node, socket: str, log: Callable[[str], None]):
    """The /diagnostics publisher, or None (said in the log) where diagnostic_msgs is missing."""
    try:
        from paam.ros.diagnostics import DiagnosticsPublisher
        return DiagnosticsPublisher(node, socket, log=log).start()
    except ImportError as err:
        log(f"not publishing /diagnostics: {err} (install ros-jazzy-diagnostic-msgs)")
        return None


def _paam():
    import paam
    return paam


def _default_socket() -> str:
    env = os.environ.get("PAAM_SOCKET")
    if env:
        return env
    try:
        import paam
        return paam.default_socket_path()
    except (ImportError, AttributeError):
        run = os.environ.get("XDG_RUNTIME_DIR")
        if run:
            return os.path.join(run, "paam", "paamd.sock")
        return f"/tmp/paam-{os.getuid()}/paamd.sock"


def _probe(path: str) -> tuple[bool, str]:
    """Whether something accepts connections on paamd's socket (connect only, nothing sent)."""
    s = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_SEQPACKET)
    s.settimeout(0.2)
    try:
        s.connect(path)
        return True, "paamd reachable"
    except OSError as exc:
        return False, f"paamd not reachable at {path}: {exc.strerror or exc}"
    finally:
        s.close()


def main(argv: Optional[list[str]] = None, *, name: str = wire.DEFAULT_BRIDGE,
         socket: Optional[str] = None, lease_sec: float = wire.DEFAULT_LEASE_SEC,
         wait: str = "hybrid", rt_priority: Optional[int] = None,
         cpu: Optional[int] = None, diagnostics: bool = True) -> int:
    """Run a bridge until SIGINT/SIGTERM (what ``paam bridge`` calls)."""
    import rclpy

    rclpy.init(args=argv)
    bridge = None
    try:
        bridge = Bridge(name=name, socket=socket, lease_sec=lease_sec, wait=wait,
                        diagnostics=diagnostics)
        reachable, why = _probe(bridge.socket_path)
        if not reachable:
            bridge._log(f"warning: {why}; registrations fail until paamd runs")
        if rt_priority is not None or cpu is not None:
            bridge.executor.set_executor_priority_cpu(rt_priority, cpu)
            bridge.executor.apply_rt()
            bridge._log(f"real-time settings: {bridge.executor.rt_report}")
        print(f"paam bridge '{bridge.name}' ready", flush=True)
        bridge.spin()
    except KeyboardInterrupt:
        pass
    finally:
        if bridge is not None:
            bridge.close()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
