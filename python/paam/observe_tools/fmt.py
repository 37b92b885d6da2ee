"""Numbers as people read them: durations with a unit that keeps three digits or so."""
from __future__ import annotations


def us(value: float | None) -> str:
    """A duration given in microseconds: '850 ns', '12.3 µs', '4.56 ms', '1.20 s'; '-' for None."""
    if value is None:
        return "-"
    v = float(value)
    if v < 1:
        return f"{v * 1000:.0f} ns"
    if v < 1000:
        return f"{v:.3g} µs" if v < 100 else f"{v:.0f} µs"
    if v < 1_000_000:
        return f"{v / 1000:.3g} ms" if v < 100_000 else f"{v / 1000:.0f} ms"
    return f"{v / 1e6:.2f} s"


def ms(value: float | None) -> str:
    """A duration given in milliseconds, as :func:`us` writes it; '-' for None."""
    return "-" if value is None else us(float(value) * 1000)


def uptime(seconds: float) -> str:
    """'42 s', '3m07s', '2h05m', '3d04h'."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def share(value: float) -> str:
    """A share 0..1 as a percentage."""
    return f"{100 * float(value):.0f}%"
