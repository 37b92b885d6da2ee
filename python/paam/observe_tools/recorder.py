"""Recording paamd's requests for a while: :class:`paam.observe.Trace`, drained as it fills."""
from __future__ import annotations

import time
from typing import Any, Callable, Optional

from ..errors import PaamError
from .source import ToolError, explain, observe_module

DRAIN_EVERY_S = 0.25  # read the ring this often, so that a busy server drops nothing


def record(socket: str, duration: float, *,
           progress: Optional[Callable[[float, int], None]] = None,
           on_start: Optional[Callable[[], None]] = None,
           trace_factory: Optional[Callable[..., Any]] = None,
           clock: Callable[[], float] = time.monotonic,
           sleep: Callable[[float], None] = time.sleep) -> tuple[list[dict], int]:
    """Records for `duration` seconds and returns (records, dropped). `on_start()` is called
    once paamd records, `progress(elapsed_s, records_so_far)` after each drain. Ctrl-C ends
    the recording early with what it has (KeyboardInterrupt is not raised)."""
    factory = trace_factory or observe_module().Trace
    records: list[dict] = []
    try:
        trace = factory(socket)
    except (PaamError, OSError) as err:
        raise ToolError(explain(err, socket)) from err
    try:
        trace.start()
        t0 = clock()
        if on_start is not None:
            on_start()
        try:
            while True:
                elapsed = clock() - t0
                if elapsed >= duration:
                    break
                sleep(min(DRAIN_EVERY_S, duration - elapsed))
                records.extend(trace.read())
                if progress is not None:
                    progress(min(clock() - t0, duration), len(records))
        except KeyboardInterrupt:
            pass
        trace.stop()
        records.extend(trace.read())  # what completed before the stop, and the final count
        dropped = int(trace.dropped)
    except (PaamError, OSError) as err:
        raise ToolError(explain(err, socket)) from err
    finally:
        try:
            getattr(trace, "close", trace.stop)()  # stops recording, and closes its connection
        except (PaamError, OSError):
            pass  # the server is gone; nothing records any more
    return records, dropped
