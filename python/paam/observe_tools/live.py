"""``paam top``'s refresh loop and its keyboard: a plain terminal (works over ssh, no mouse),
`q` or Ctrl-C to leave, and the terminal as it was afterwards."""
from __future__ import annotations

import os
import select
import sys
import termios
import time
import tty
from typing import Any, Callable, Optional, Protocol

from rich.console import Console
from rich.live import Live

from .source import ToolError
from .top_view import render

HELP = "q or Ctrl-C: quit"


class Keys(Protocol):
    def wait(self, timeout: float) -> Optional[str]:
        """The next key pressed within timeout seconds, or None."""


class TerminalKeys:
    """Keys from a terminal in cbreak mode (one key at a time, no echo; Ctrl-C still raises
    KeyboardInterrupt), restored on exit. On a stream that is not a terminal nothing is read
    and :meth:`wait` only waits."""

    def __init__(self, stream=None) -> None:
        self._stream = stream if stream is not None else sys.stdin
        self._fd: Optional[int] = None
        self._saved: Any = None

    def __enter__(self) -> "TerminalKeys":
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            return self
        if os.isatty(fd):
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd, termios.TCSANOW)
            self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            self._fd = None

    def wait(self, timeout: float) -> Optional[str]:
        if self._fd is None:
            time.sleep(max(0.0, timeout))
            return None
        ready, _, _ = select.select([self._fd], [], [], max(0.0, timeout))
        if not ready:
            return None
        data = os.read(self._fd, 32)
        return data.decode(errors="replace")[:1] if data else None


def run_live(fetch: Callable[[], dict], *, interval: float, console: Console, keys: Keys,
             screen: bool = True, max_frames: Optional[int] = None) -> int:
    """Redraw every `interval` seconds until `q` (or after `max_frames` frames). When a
    refresh fails (paamd restarted, say) the last snapshot stays on screen with the reason
    beneath it, and the next refresh tries again."""
    snap = fetch()  # a first failure is the caller's to report: there is nothing to show
    frames = 0
    with Live(render(snap, note=HELP), console=console, screen=screen, auto_refresh=False,
              transient=False) as live:
        while True:
            frames += 1
            if max_frames is not None and frames >= max_frames:
                return 0
            deadline = time.monotonic() + interval
            while True:
                key = keys.wait(deadline - time.monotonic())
                if key and key in "qQ":
                    return 0
                if time.monotonic() >= deadline:
                    break
            try:
                snap = fetch()
                note = HELP
            except ToolError as err:
                note = f"{err}; retrying every {interval:g} s   {HELP}"
            live.update(render(snap, note=note), refresh=True)
