"""paam — priority-driven accelerator access management for multi-process real-time systems.

Lifecycle: start a server (``paam serve`` or ``paamd``), then in each process create a
:class:`Client` with the chain priority and the kernels a callback uses, send requests with
:meth:`Client.request` (synchronous) or :meth:`Client.submit` (asynchronous), and close it.
``paam.testing.start_server()`` starts a private server for tests and scripts.
"""
from __future__ import annotations

from . import errors, testing
from .client import Client, DeviceBuffers, Future, TimingModel, default_socket_path
from .errors import (Busy, Cancelled, InputTooLarge, KernelFailed, NotAdmitted, PaamError,
                     PaamTimeout, PermissionDenied, ServerDied, ServerNotRunning, UnknownKernel)

__version__ = "0.1.0"

__all__ = [
    "Client", "DeviceBuffers", "Future", "TimingModel", "default_socket_path", "errors", "testing",
    "PaamError", "ServerNotRunning", "NotAdmitted", "UnknownKernel", "InputTooLarge", "ServerDied",
    "PaamTimeout", "Cancelled", "KernelFailed", "Busy", "PermissionDenied",
]

