"""Where the tools get their data: paamd's socket, and the errors a user sees when it is not
there."""
from __future__ import annotations

from typing import Any, Callable

from ..errors import PaamError, PermissionDenied, ServerNotRunning


class ToolError(Exception):
    """A problem the user can fix, printed as one line (no traceback)."""


def socket_path(arg: str | None) -> str:
    """The socket a tool talks to: the --socket argument, else paam's default
    ($PAAM_SOCKET, $XDG_RUNTIME_DIR/paam/paamd.sock, /tmp/paam-<uid>/paamd.sock)."""
    if arg:
        return arg
    from ..client import default_socket_path
    return default_socket_path()


def observe_module():
    """paam.observe, or a ToolError when this build of paam lacks it."""
    try:
        from .. import observe
    except ImportError as err:  # a paam built without live statistics
        raise ToolError(f"this paam has no live statistics (paam.observe: {err})") from err
    return observe


def explain(err: BaseException, socket: str) -> str:
    """One line saying what went wrong reaching paamd at socket."""
    if isinstance(err, ServerNotRunning):
        return f"no paamd at {socket}: start one with `paam serve`"
    if isinstance(err, PermissionDenied):
        return f"paamd at {socket} refused this user: {err}"
    if isinstance(err, PaamError):
        return f"paamd at {socket}: {err}"
    return f"paamd at {socket}: {type(err).__name__}: {err}"


def stats_fetcher(socket: str, timeout: float = 2.0) -> Callable[[], dict[str, Any]]:
    """A function that returns one statistics snapshot of paamd at socket, raising ToolError
    with :func:`explain`'s line when paamd cannot be asked."""
    observe = observe_module()

    def fetch() -> dict[str, Any]:
        try:
            return observe.stats(socket, timeout=timeout)
        except (PaamError, OSError) as err:
            raise ToolError(explain(err, socket)) from err
    return fetch
