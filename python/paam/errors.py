"""Exceptions raised by paam. Every one is a :class:`PaamError` with a ``code`` (the stable
short name of the error, e.g. ``"not_admitted"``) and the server's or client's message."""
from __future__ import annotations


class PaamError(Exception):
    """Raised when a paam operation fails. ``code`` is the stable error name."""

    code = "error"

    def __init__(self, message: str = "", code: str | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        msg = super().__str__()
        return f"{self.code}: {msg}" if msg else self.code


class ServerNotRunning(PaamError, ConnectionError):
    """Raised when no paamd listens on the socket path."""
    code = "server_not_running"


class NotAdmitted(PaamError):
    """Raised when admission control refuses a registration; the message names the chain
    that would miss its deadline and by how much."""
    code = "not_admitted"


class UnknownKernel(PaamError, KeyError):
    """Raised for a kernel the server (or direct mode) does not have, or one not declared."""
    code = "unknown_kernel"


class InputTooLarge(PaamError, ValueError):
    """Raised when an input exceeds the size declared at registration."""
    code = "input_too_large"


class OutputTooLarge(PaamError, ValueError):
    """Raised when an output would exceed the size declared at registration."""
    code = "output_too_large"


class ServerDied(PaamError, ConnectionError):
    """Raised when the server went away while a request was outstanding."""
    code = "server_died"


class PaamTimeout(PaamError, TimeoutError):
    """Raised when a request did not complete within the caller's timeout."""
    code = "timeout"


class InvalidArgument(PaamError, ValueError):
    """Raised for malformed parameters (shapes, options)."""
    code = "invalid_argument"


class VersionMismatch(PaamError):
    """Raised when client and server speak different protocol versions."""
    code = "version_mismatch"


class ProtocolError(PaamError):
    """Raised when a peer sent something that does not parse."""
    code = "protocol_error"


class Busy(PaamError):
    """Raised when a kernel already has a request outstanding on this client."""
    code = "busy"


class KernelFailed(PaamError):
    """Raised when the kernel itself reported an error."""
    code = "kernel_failed"


class ResourceExhausted(PaamError):
    """Raised when the server is out of clients, queue slots or memory."""
    code = "resource_exhausted"


class Closed(PaamError):
    """Raised when using a client after close()."""
    code = "closed"


class SystemError_(PaamError, OSError):
    """Raised when an operating-system call failed."""
    code = "system_error"


class PermissionDenied(PaamError, PermissionError):
    """Raised when the server runs as a uid this process does not trust (another user's server
    on the socket path; see ``PAAM_TRUSTED_SERVER_UIDS`` in docs/security.md), or when paamd
    refuses a socket directory that is not private to it."""
    code = "permission_denied"


class Cancelled(PaamTimeout):
    """Raised when the server stopped a request before it finished: it was still queued or
    running when its time limit passed (``timeout_sec=`` of a request, which the server enforces
    as well as the client) or the server's cap on a request's length (``paamd
    --max-request-ms``). Long built-in kernels stop at their next slice; a kernel that cannot
    be sliced finishes its current launch first. A :class:`PaamTimeout` (and so a
    ``TimeoutError``): ``except paam.PaamTimeout`` catches a time limit whichever side noticed it
    first. Unlike a client-side timeout, the request is over: its kernel may be used again."""
    code = "cancelled"


# Numeric codes as in core/include/paam/status.h (paam::Errc).
_BY_CODE = {
    1: ServerNotRunning, 2: NotAdmitted, 3: UnknownKernel, 4: InputTooLarge, 5: ServerDied,
    6: PaamTimeout, 7: InvalidArgument, 8: VersionMismatch, 9: ProtocolError, 10: Busy,
    11: KernelFailed, 12: ResourceExhausted, 13: Closed, 14: SystemError_, 15: OutputTooLarge,
    16: PermissionDenied, 17: Cancelled,
}


def from_code(code: int, message: str) -> PaamError:
    """The exception for a native error code (used by the native module)."""
    return _BY_CODE.get(code, PaamError)(message)
