"""The Python client: register a callback with paamd and send it typed requests.

Example::

    import numpy as np, paam
    with paam.Client(priority=10, kernels=["vector_add", "spin"], wait="suspend") as c:
        c.request("vector_add", np.ones(4), np.arange(4))   # -> array([1., 2., 3., 4.])
        fut = c.submit("spin", duration_ms=5)                 # asynchronous
        ...                                                   # other CPU work
        fut.result(timeout_sec=1.0)                           # -> 5.0x (ms on the device)

Thread safety: requests on different kernels may run from different threads; one kernel
holds one request at a time (a second submit before the first completes raises Busy). close()
may come from any thread: it waits for requests in progress elsewhere to complete.

Device data (CUDA IPC): a client whose data already lives on the GPU registers, per kernel,
its device input and output buffers as CUDA IPC handles (``device_buffers=``, see
:class:`DeviceBuffers`), then runs requests on them in place with :meth:`Client.request_device`
or :meth:`Client.submit_device`: no host copies. The server must run the CUDA backend::

    import cupy as cp, paam
    n = 1 << 18
    ab = cp.cuda.runtime.malloc(2 * n * 4); out = cp.cuda.runtime.malloc(n * 4)   # plain cudaMalloc
    bufs = paam.DeviceBuffers(cp.cuda.runtime.ipcGetMemHandle(ab), 2 * n * 4,
                              cp.cuda.runtime.ipcGetMemHandle(out), n * 4, gpu=0)
    with paam.Client(priority=10, kernels=["vector_add"], device_buffers={"vector_add": bufs}) as c:
        ...                                   # write a, b into ab on the GPU; synchronize the stream
        c.request_device("vector_add", params=[n])   # -> n * 4 output bytes, now in `out`
"""
from __future__ import annotations

import os
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from . import _core
from . import tensors as _tensors
from .errors import Busy, Cancelled, Closed, InvalidArgument, PaamError, PaamTimeout, UnknownKernel
from .kernels import KernelSpec, spec_for


@dataclass
class TimingModel:
    """A callback's timing model for paamd's admission control (times in milliseconds).

    Pass it as ``paam.Client(..., timing=...)``. A paamd started with ``--admission analysis``
    admits the registration only if every critical chain it knows, with this callback added,
    keeps its deadline under the response-time analysis (docs/analysis.md); otherwise the
    client raises :class:`paam.NotAdmitted` naming the chain that would miss. Without
    ``--admission analysis`` the model is not used.

    One client registers one callback; a chain of ``chain_length`` callbacks is that many
    clients, each with ``callback_index`` 0, 1, ... and the same ``chain``, ``period_ms``,
    ``deadline_ms``, ``chain_length`` and ``best_effort``, and the same client ``priority``
    (the chain priority; unique per chain, larger is more critical).

    - ``chain``, ``period_ms``: the chain's name and period (required).
    - ``deadline_ms``: the chain's end-to-end deadline, at most the period (0: the period).
    - ``cpu_wcet_ms``, ``segments_ms``: this callback's CPU WCET and the WCET of each of its
      accelerator requests, in order.
    - ``executor``, ``executor_cpu``, ``executor_priority``, ``executor_wait``: the executor that
      runs the callback: a name (required: the analysis charges callbacks of one executor to
      each other), its CPU, its OS priority and how it waits for the accelerator (``spin``,
      ``suspend`` or ``hybrid``). One name must mean the same executor in every registration.
    - ``best_effort``: the chain has no deadline to keep; it is analysed as interference only.

    Example (runs as is: it starts its own paamd; against ``paam serve --admission analysis
    --buckets 2`` leave out ``start_server`` and ``socket=``)::

        import paam
        from paam.testing import start_server

        with start_server(admission="analysis", buckets=2) as srv:
            # Chain "perception", 20 Hz, two callbacks on executor ex1 (CPU 1, priority 90).
            def perception(index, cpu_ms, gpu_ms):
                return paam.TimingModel(
                    chain="perception", period_ms=50.0, cpu_wcet_ms=cpu_ms, segments_ms=[gpu_ms],
                    callback_index=index, chain_length=2,
                    executor="ex1", executor_cpu=1, executor_priority=90)

            with (paam.Client(priority=10, kernels=["spin"], socket=srv.socket_path,
                              timing=perception(0, 2.0, 5.0)) as detect,
                  paam.Client(priority=10, kernels=["spin"], socket=srv.socket_path,
                              timing=perception(1, 1.0, 3.0)) as track):
                print(track.admission_note)  # admitted: all 1 critical chains schedulable; ...
                detect.request("spin", duration_ms=5.0)
                track.request("spin", duration_ms=3.0)

                # A more critical chain whose 40 ms GPU request would make "perception" miss
                # its deadline is refused.
                mapping = paam.TimingModel(chain="mapping", period_ms=100.0, segments_ms=[40.0],
                                           executor="ex2", executor_cpu=2, executor_priority=90)
                try:
                    paam.Client(priority=20, kernels=["spin"], socket=srv.socket_path,
                                timing=mapping)
                except paam.NotAdmitted as refusal:
                    print(refusal)  # not_admitted: chain 'perception' would miss its deadline ...
    """
    chain: str
    period_ms: float
    deadline_ms: float = 0.0           # 0: equal to the period
    cpu_wcet_ms: float = 0.0
    segments_ms: list[float] = field(default_factory=list)
    callback_index: int = 0
    chain_length: int = 1
    executor: str = ""
    executor_cpu: int = 0
    executor_priority: int = 0
    executor_wait: str = "suspend"
    best_effort: bool = False


KernelDecls = Iterable[str] | Mapping[str, int | tuple[int, int] | None]


@dataclass
class DeviceBuffers:
    """A kernel's device input and output buffers, shared with paamd through CUDA IPC.

    ``input_handle``/``output_handle`` are the 64 bytes of a ``cudaIpcMemHandle_t``
    (``cupy.cuda.runtime.ipcGetMemHandle(ptr)``, ``cudaIpcGetMemHandle``) of a device
    allocation in this process; the buffer starts ``*_offset`` bytes into that allocation
    (0 for a plain ``cudaMalloc``; pool allocators such as CuPy's or PyTorch's hand out pieces
    of larger allocations, whose offset you must pass) and is ``*_bytes`` long. ``gpu`` is the
    CUDA device ordinal of the buffers as the server numbers its GPUs (run both with the same
    ``CUDA_VISIBLE_DEVICES``); the registration is placed on that GPU.

    The server opens the handles once, at registration (refused with InvalidArgument if it does
    not run the CUDA backend, cannot open a handle, or does not serve that GPU; InputTooLarge
    if a buffer is larger than its allocation) and closes them when the client deregisters or
    dies. Keep the allocations alive for as long as the client is registered.
    """
    input_handle: bytes
    input_bytes: int
    output_handle: bytes
    output_bytes: int
    gpu: int = 0
    input_offset: int = 0
    output_offset: int = 0


def _device_decls(device_buffers: Mapping[str, "DeviceBuffers | tuple"] | None,
                  declared: Sequence[str]) -> list[tuple[str, bytes, int, int, bytes, int, int, int]]:
    out = []
    for name, b in (device_buffers or {}).items():
        if name not in declared:
            raise UnknownKernel(f"device buffers for '{name}', which is not among the kernels "
                                f"({', '.join(declared)})")
        if not isinstance(b, DeviceBuffers):
            b = DeviceBuffers(*b)
        out.append((name, bytes(b.input_handle), int(b.input_offset), int(b.input_bytes),
                    bytes(b.output_handle), int(b.output_offset), int(b.output_bytes), int(b.gpu)))
    return out


def _declarations(kernels: KernelDecls) -> list[tuple[str, int, int]]:
    out = []
    items = kernels.items() if isinstance(kernels, Mapping) else ((k, None) for k in kernels)
    for name, size in items:
        spec = spec_for(name)
        if size is None:
            max_in, max_out = spec.max_input, spec.max_output
        elif isinstance(size, int):
            max_in, max_out = size, max(size, spec.max_output)
        else:
            max_in, max_out = size
        out.append((name, int(max_in), int(max_out)))
    return out


def _model_packer(model: str):
    def pack(view: np.ndarray, *positional: Any, **tensors: Any) -> tuple[int, list[int], None]:
        if positional:
            raise InvalidArgument(f"model '{model}' takes named tensors, e.g. infer('{model}', images=array)")
        return _tensors.pack(view, model, tensors), [], None
    return pack


def _model_unpacker(model: str):
    return lambda out, _ctx: _tensors.unpack(out, model)


_RAN_ON = {1: "cpu", 2: "cuda"}


def default_socket_path() -> str:
    """$PAAM_SOCKET, else $XDG_RUNTIME_DIR/paam/paamd.sock, else /tmp/paam-<uid>/paamd.sock."""
    return _core.default_socket_path()


# How long a request waits for the server's answer to the kernel's earlier request that timed
# out on this side (Client._settle): the server stops it within a watchdog tick and a slice.
_SETTLE_SEC = 0.5


def _timeout_ns(timeout_sec: float | None) -> int:
    """The native layer's timeout (and time limit): 0 waits as long as the request takes."""
    return 0 if timeout_sec is None else max(1, int(timeout_sec * 1e9))


class _Gate:
    """The requests in progress on one client, so that close() on another thread (an executor
    shut down while a callback waits for its request) waits for them: it deregisters, after
    which their results could no longer be collected, only once none is left, and refuses new
    ones from the moment it begins."""

    __slots__ = ("_cond", "_busy", "_closing")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._busy = 0
        self._closing = False

    def __enter__(self) -> None:
        with self._cond:
            if self._closing:
                raise Closed("client is closed")
            self._busy += 1

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._busy -= 1
            if self._closing and not self._busy:
                self._cond.notify_all()

    def close(self) -> None:
        """Refuses new requests and waits until none is in progress."""
        with self._cond:
            self._closing = True
            self._cond.wait_for(lambda: not self._busy)


class Future:
    """The result of :meth:`Client.submit`, collected with :meth:`result`."""

    def __init__(self, client: "Client", kernel: str, index: int, ctx: Any, spec: KernelSpec | None):
        self._client, self.kernel, self._index, self._ctx, self._spec = client, kernel, index, ctx, spec
        self._value: Any = None
        self._error: BaseException | None = None
        self._collected = False
        #: where the request ran, once collected: "cpu", "cuda" or None (as Client.ran_on)
        self.ran_on: str | None = None
        #: True once collected if paamd's fallback ran the kernel's CPU version (Client.fallback)
        self.fallback = False

    def done(self) -> bool:
        """True when the request has completed (result() would not block)."""
        return self._collected or self._client._native.ready(self._index)

    def result(self, timeout_sec: float | None = None) -> Any:
        """Waits for and returns the result. ``None`` blocks as long as the request takes
        (bounded if the server dies: ServerDied); ``0`` does not wait (PaamTimeout if not done).
        After a timeout the request stays outstanding and result() may be called again; that
        timeout is this wait's only (the request's own limit is submit()'s ``timeout_sec``,
        past which the server stops it and result() raises :class:`paam.Cancelled`)."""
        if not self._collected:
            if timeout_sec is not None and timeout_sec <= 0:
                if not self.done():
                    raise PaamTimeout(f"'{self.kernel}' has not completed")
                timeout_sec = None
            timeout_ns = _timeout_ns(timeout_sec)
            with self._client._gate:
                try:
                    nbytes = self._client._native.wait(self._index, timeout_ns)
                    self._value = self._client._unpack(self._index, nbytes, self._ctx, self._spec)
                except Exception as exc:  # noqa: BLE001 - stored and re-raised below
                    if isinstance(exc, PaamTimeout) and not isinstance(exc, Cancelled):
                        raise  # this wait's timeout: the request is still outstanding
                    self._error = exc
                self._collected = True
                device, self.fallback = self._client._native.ran_on(self._index)
                self.ran_on = _RAN_ON.get(device)
        if self._error is not None:
            raise self._error
        return self._value


class Client:
    """One registration with paamd: one callback with a fixed chain priority and kernels.

    :param priority: chain priority; larger is more critical. Fixed for the client's life.
    :param kernels: kernel names (default capacities), or a mapping name -> max input bytes,
        or name -> (max input bytes, max output bytes).
    :param wait: ``"spin"`` (poll), ``"suspend"`` (futex) or ``"hybrid"`` (spin, then suspend).
        Spin only on a core paamd's dispatcher cannot need: a thread spinning under SCHED_FIFO
        above the dispatcher, on the dispatcher's only core, keeps its own request from being
        dispatched (paamd's threads keep off the CPU backend's device core, so on a 2-core
        machine the dispatcher shares the other core with the executors).
    :param socket: server socket path; ``None`` uses :func:`default_socket_path`.
    :param timing: optional :class:`TimingModel` for admission control (none: best-effort).
    :param direct: run the kernels in this process without a server (the baseline).
    :param device_cpu: direct mode, cpu backend: the core that plays the device
        (-1: the last core, -2: do not pin).
    :param device_buffers: kernel name -> :class:`DeviceBuffers` (or the tuple
        ``(input_handle, input_bytes, output_handle, output_bytes, gpu)``): device buffers the
        server runs that kernel on with :meth:`request_device`/:meth:`submit_device` (CUDA IPC,
        server on the CUDA backend only; not in direct mode). Host requests keep working.

    :param models: models paamd serves (``paamd --model NAME=PATH``, docs/models.md) that this
        client runs with :meth:`infer`: names, or a mapping name -> None or (max input bytes,
        max output bytes). Each becomes a kernel whose region is sized from the signature paamd
        publishes (a model with an unbounded dimension needs its sizes). With models and no
        ``kernels``, the client declares only the models.

    :param deadline_ms: the relative deadline of this callback's requests (0: the timing
        model's chain deadline, else none). ``paamd --queue edf`` runs the requests of a bucket
        by absolute deadline, the request's release (:attr:`release_ns`, else its submission)
        plus this; ``paamd --fallback cpu-on-overload`` runs a kernel's CPU version when the
        bucket's queue would make the request miss it (:meth:`ran_on` says where it ran).

    Time limits: ``timeout_sec`` of a request is also its time limit on the server. A request
    not finished that long after it was submitted, queued or running, is cancelled: a long
    built-in kernel (``spin``, ``matmul``) stops at its next slice, a kernel that cannot be
    sliced finishes its current launch, and the device is free for the next request. The call
    raises :class:`paam.Cancelled` when the server stopped it, or :class:`paam.PaamTimeout` when
    this process gave up waiting first (Cancelled is a PaamTimeout, so one ``except`` catches
    both). The server caps every request's length as well (``paamd --max-request-ms``, default
    60 s). Direct mode has no server and runs every kernel to its end.
    """

    def __init__(self, priority: int = 0, kernels: KernelDecls | None = None, *, wait: str = "suspend",
                 socket: str | os.PathLike | None = None, timing: TimingModel | None = None,
                 name: str = "", direct: bool = False, direct_backend: str = "cpu", device_cpu: int = -1,
                 unit: int = -1, plugins: Sequence[str] = (), hybrid_spin_us: float = 20.0,
                 connect_timeout_sec: float = 5.0,
                 device_buffers: Mapping[str, DeviceBuffers | tuple] | None = None,
                 models: Iterable[str] | Mapping[str, tuple[int, int] | None] = (),
                 deadline_ms: float = 0.0):
        if kernels is None:
            kernels = () if models else ("spin",)
        self._decls = _declarations(kernels)
        self._model_specs, self._model_infos = self._model_declarations(models, socket, direct,
                                                                          connect_timeout_sec)
        self._decls += [(n, s.max_input, s.max_output) for n, s in self._model_specs.items()
                        if n not in {d[0] for d in self._decls}]
        device = _device_decls(device_buffers, [d[0] for d in self._decls])
        self._native = _core.Client(
            os.fspath(socket) if socket is not None else "", name or f"pid{os.getpid()}", int(priority),
            self._decls, wait, asdict(timing) if timing is not None else None, int(unit), bool(direct),
            direct_backend, int(device_cpu), list(plugins), int(hybrid_spin_us * 1000),
            int(connect_timeout_sec * 1000), device, float(deadline_ms))
        self._index = {name: i for i, (name, _, _) in enumerate(self._decls)}
        self._device_sizes = {d[0]: d[3] for d in device}
        self._wait = wait
        self._release_ns = 0
        self._last_index: int | None = None
        self._gate = _Gate()
        # Kernels whose synchronous request timed out on this side: the request stays outstanding
        # until the server answers it (at its time limit), and the kernel's next request
        # collects that answer first (_settle).
        self._timed_out: set[int] = set()

    # -- requests ---------------------------------------------------------------------------

    def request(self, kernel: str, *inputs: Any, timeout_sec: float | None = None, **params: Any) -> Any:
        """Runs ``kernel`` on ``inputs`` and returns its result (see paam.kernels for types).

        ``timeout_sec`` (None: none) is the request's time limit, enforced by the server too:
        past it the call raises :class:`paam.Cancelled` (the server stopped the request) or
        :class:`paam.PaamTimeout` (this side stopped waiting first; the kernel's next request
        collects the server's answer first, and raises Busy if the server is still running it)."""
        with self._gate:
            k, spec = self._lookup(kernel)
            self._settle(k, kernel)
            nbytes, p, ctx = spec.pack(self._native.input_view(k), *inputs, **params)
            out = self._call(k, nbytes, p, timeout_sec)
            self._last_index = k
            return self._unpack(k, out, ctx, spec)

    def submit(self, kernel: str, *inputs: Any, timeout_sec: float | None = None, **params: Any) -> Future:
        """Queues a request and returns a :class:`Future` at once (in direct mode the kernel
        runs before submit returns). ``timeout_sec`` (None: none) is the request's time limit
        on the server: past it the server stops the request and the Future's result() raises
        :class:`paam.Cancelled`."""
        with self._gate:
            k, spec = self._lookup(kernel)
            self._settle(k, kernel)
            if self._native.outstanding(k):
                raise Busy(f"a request for '{kernel}' is outstanding; collect its result first")
            nbytes, p, ctx = spec.pack(self._native.input_view(k), *inputs, **params)
            self._native.submit(k, nbytes, p, False, _timeout_ns(timeout_sec))
            self._last_index = k
            return Future(self, kernel, k, ctx, spec)

    def request_device(self, kernel: str, params: Sequence[int] = (), input_bytes: int | None = None,
                       timeout_sec: float | None = None) -> int:
        """Runs ``kernel`` on its registered device buffers (CUDA IPC) and returns the number of
        output bytes the kernel wrote into the device output buffer (its ``plan()``).

        ``params`` are the kernel's integer parameters (``[n]`` for vector_add); ``input_bytes``
        defaults to the whole device input buffer. Finish writing the input on the GPU (e.g.
        ``cupy.cuda.Stream.null.synchronize()``) before calling: the server's stream does not
        wait for yours. When this returns, the output is complete in device memory. Raises
        InvalidArgument if ``kernel`` has no device buffers. ``timeout_sec``: as for
        :meth:`request`."""
        with self._gate:
            k, nbytes = self._device_request(kernel, input_bytes)
            self._settle(k, kernel)
            out = self._call(k, nbytes, [int(x) for x in params], timeout_sec, device=True)
            self._last_index = k
            return out

    def submit_device(self, kernel: str, params: Sequence[int] = (), input_bytes: int | None = None,
                      timeout_sec: float | None = None) -> Future:
        """Asynchronous :meth:`request_device`: returns a :class:`Future` whose result is the
        output byte count (the output is in device memory once the future is done).
        ``timeout_sec``: as for :meth:`submit`."""
        with self._gate:
            k, nbytes = self._device_request(kernel, input_bytes)
            self._settle(k, kernel)
            if self._native.outstanding(k):
                raise Busy(f"a request for '{kernel}' is outstanding; collect its result first")
            self._native.submit(k, nbytes, [int(x) for x in params], True, _timeout_ns(timeout_sec))
            self._last_index = k
            return Future(self, kernel, k, None, None)

    def infer(self, model: str, /, timeout_sec: float | None = None, **tensors: Any) -> dict[str, np.ndarray]:
        """Runs ``model`` (declared with ``models=``) on named tensors and returns its outputs,
        name -> numpy array (copies), e.g. ``client.infer("detector", images=batch)``.

        Each array goes with its own dtype and shape; paamd's model checks them against its
        signature and refuses a wrong dtype, a wrong shape, a missing or an unknown input with
        :class:`paam.InvalidArgument` naming what it expected, and an output beyond its signature
        with :class:`paam.KernelFailed`; the next request works as usual. ``timeout_sec``: as
        for :meth:`request`."""
        self._model_spec(model)
        return self.request(model, timeout_sec=timeout_sec, **tensors)

    def submit_infer(self, model: str, /, timeout_sec: float | None = None, **tensors: Any) -> Future:
        """Asynchronous :meth:`infer`: a :class:`Future` whose ``result()`` is the outputs."""
        self._model_spec(model)
        return self.submit(model, timeout_sec=timeout_sec, **tensors)

    @property
    def models(self) -> dict[str, Any]:
        """The declared models: name -> :class:`paam.models.ModelInfo` (signature, format, file)."""
        return dict(self._model_infos)

    def input_buffer(self, kernel: str) -> np.ndarray:
        """The zero-copy input area of ``kernel`` (uint8, writable). The array keeps the client's
        shared memory mapped for as long as it lives, so it stays safe to read and write after
        close(); from then on no request uses what it holds."""
        return self._native.input_view(self._lookup(kernel)[0])

    def request_raw(self, kernel: str, input_bytes: int, params: Sequence[int] = (),
                    timeout_sec: float | None = None) -> np.ndarray:
        """Runs ``kernel`` on the first ``input_bytes`` already written into input_buffer();
        returns a copy of the output bytes. ``timeout_sec``: as for :meth:`request`."""
        with self._gate:
            k = self._lookup(kernel)[0]
            self._settle(k, kernel)
            out = self._call(k, int(input_bytes), [int(x) for x in params], timeout_sec)
            self._last_index = k
            return self._native.output_view(k)[:out].copy()

    # -- introspection ----------------------------------------------------------------------

    def timestamps(self, kernel: str) -> dict[str, int]:
        """Stage timestamps (CLOCK_MONOTONIC ns) of the last completed request of ``kernel``:
        submitted, dequeued, picked, device_start, device_end, completed, woken."""
        return self._native.timestamps(self._lookup(kernel)[0])

    def ran_on(self, kernel: str) -> str | None:
        """Where the last completed request of ``kernel`` ran: ``"cpu"`` or ``"cuda"``, or None
        when it did not run (refused, or cancelled while queued) or none has completed."""
        device, _ = self._native.ran_on(self._lookup(kernel)[0])
        return _RAN_ON.get(device)

    def fallback(self, kernel: str) -> bool:
        """True when paamd's fallback policy (``paamd --fallback cpu-on-overload``) ran the last
        completed request of ``kernel`` on the kernel's CPU version instead of its bucket's
        device (then :meth:`ran_on` is ``"cpu"``)."""
        return self._native.ran_on(self._lookup(kernel)[0])[1]

    @property
    def release_ns(self) -> int:
        """The release time (``time.monotonic_ns()``) of the job that the next requests belong
        to, e.g. the timer expiry that started this chain instance; 0 (the default): each
        request's own submission. With a relative deadline (``deadline_ms``) it sets their
        absolute deadline under ``paamd --queue edf``."""
        return self._release_ns

    @release_ns.setter
    def release_ns(self, value: int) -> None:
        value = int(value)
        if value < 0:
            raise InvalidArgument(f"release_ns must be 0 or a time.monotonic_ns() value, got {value}")
        self._native.set_release(value)
        self._release_ns = value

    @property
    def last_timestamps(self) -> dict[str, int]:
        """Stage timestamps of the most recent request of any kernel."""
        return {} if self._last_index is None else self._native.timestamps(self._last_index)

    @property
    def priority(self) -> int:
        return self._native.priority

    @property
    def bucket(self) -> int:
        """Bucket assigned at registration (0 = highest)."""
        return self._native.bucket

    @property
    def buckets(self) -> int:
        return self._native.buckets

    @property
    def unit(self) -> int:
        return self._native.unit

    @property
    def client_id(self) -> int:
        return self._native.client_id

    @property
    def server_pid(self) -> int:
        return self._native.server_pid

    @property
    def admission_note(self) -> str:
        """How admission control decided (also says when no analysis ran)."""
        return self._native.admission

    @property
    def direct(self) -> bool:
        return self._native.direct

    @property
    def wait(self) -> str:
        return self._wait

    @property
    def kernels(self) -> list[str]:
        return [d[0] for d in self._decls]

    # -- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """Deregisters from the server. Idempotent, and safe from any thread: a request in
        progress on another thread (request(), or a Future's result()) completes first and
        returns its result; requests made once close() has begun raise Closed. Arrays from
        input_buffer() stay valid memory (no request uses them any more); the shared memory is
        unmapped once the last of them is gone."""
        self._gate.close()
        self._native.close()

    @property
    def closed(self) -> bool:
        return self._native.closed

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        native = getattr(self, "_native", None)
        if native is not None:
            try:
                native.close()
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass

    def __repr__(self) -> str:
        state = "closed" if self.closed else (
            "direct" if self.direct else f"bucket {self.bucket}/{self.buckets}")
        return f"<paam.Client priority={self.priority if not self.closed else '?'} {state} kernels={self.kernels}>"

    # -- internals --------------------------------------------------------------------------

    def _lookup(self, kernel: str) -> tuple[int, KernelSpec]:
        if self._native.closed:
            raise Closed("client is closed")
        try:
            return self._index[kernel], self._model_specs.get(kernel) or spec_for(kernel)
        except KeyError:
            raise UnknownKernel(
                f"'{kernel}' was not declared at registration (declared: {', '.join(self._index)})") from None

    @staticmethod
    def _model_declarations(models, socket, direct: bool, timeout_sec: float) -> tuple[dict, dict]:
        """The specs (how tensors are packed and unpacked) and signatures of the models."""
        if not models:
            return {}, {}
        if direct:
            raise InvalidArgument("models run in paamd (paamd --model NAME=PATH); direct mode has no model plugin")
        from .models import model_declarations, query_models
        infos = query_models(socket, timeout_sec)
        label = os.fspath(socket) if socket is not None else default_socket_path()
        specs, chosen = {}, {}
        for name, max_in, max_out in model_declarations(models, infos, label):
            chosen[name] = next(m for m in infos if m.name == name)
            specs[name] = KernelSpec(name, max_in, max_out, _model_packer(name), _model_unpacker(name))
        return specs, chosen

    def _model_spec(self, model: str) -> KernelSpec:
        spec = self._model_specs.get(model)
        if spec is None:
            if model in self._index:
                raise InvalidArgument(f"'{model}' is a kernel, not a model: run it with request()")
            raise UnknownKernel(f"model '{model}' was not declared at registration (declared models: "
                                f"{', '.join(self._model_specs) or 'none; pass models=[...]'})")
        return spec

    def _call(self, k: int, nbytes: int, params: Sequence[int], timeout_sec: float | None,
              device: bool = False) -> int:
        """A synchronous request whose time limit and wait are both ``timeout_sec``."""
        limit = _timeout_ns(timeout_sec)
        try:
            return self._native.call(k, nbytes, params, limit, device, limit)
        except PaamTimeout as exc:
            if not isinstance(exc, Cancelled):
                self._timed_out.add(k)  # outstanding until the server's answer is collected
            raise

    def _settle(self, k: int, kernel: str) -> None:
        """Collects (and drops) the answer to a request of ``k`` that timed out on this side.
        The server stops it at the same limit, so the answer is due: it is waited for up to
        _SETTLE_SEC, then Busy (a kernel that cannot be sliced runs to the end of its launch)."""
        if k not in self._timed_out:
            return
        if self._native.outstanding(k):
            try:
                self._native.wait(k, _timeout_ns(_SETTLE_SEC))
            except PaamTimeout as exc:
                if not isinstance(exc, Cancelled):
                    raise Busy(f"the earlier request for '{kernel}' timed out here and still runs on the "
                               "server, past its time limit (a kernel without slices finishes its launch "
                               "first)") from None
            except PaamError:
                pass  # its answer went to nobody
        self._timed_out.discard(k)

    def _unpack(self, k: int, nbytes: int, ctx: Any, spec: KernelSpec | None) -> Any:
        if spec is None:  # device data: the output is in the device buffer
            return nbytes
        return spec.unpack(self._native.output_view(k)[:nbytes], ctx)

    def _device_request(self, kernel: str, input_bytes: int | None) -> tuple[int, int]:
        k = self._lookup(kernel)[0]
        if not self._native.has_device_buffers(k):
            from .errors import InvalidArgument
            raise InvalidArgument(f"'{kernel}' was registered without device_buffers")
        if input_bytes is None:
            input_bytes = self._device_sizes[kernel]
        return k, int(input_bytes)
