"""Human-readable tables of analysis results."""
from __future__ import annotations

import math
import textwrap

from paam.analysis.bounds import Analysis, ChainBound


def description_text(description: str, width: int = 96) -> str:
    """A system's ``description`` for the top of a report: each paragraph wrapped to ``width``."""
    return "\n".join(textwrap.fill(p, width) if p.strip() else ""
                     for p in description.strip().splitlines())


def fmt_time(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.3f}"


def fmt_bound(c: ChainBound) -> str:
    if math.isinf(c.wcrt):
        return "unbounded"
    # Iteration stopped as soon as it passed the deadline: the real bound is at least this.
    return f"{c.wcrt:.3f}" if c.converged else f">={c.wcrt:.3f}"


def verdict(c: ChainBound) -> str:
    word = "ok" if c.schedulable else "MISS"
    return f"{word.lower()} (best-effort)" if c.best_effort else word


def _table(rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
                 for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def chain_table(analysis: Analysis) -> str:
    """One row per chain: bound, deadline, verdict and the parts of the bound (ms)."""
    header = ["chain", "prio", "period", "deadline", "bound", "verdict", "blocking",
              "own CPU", "H*", "interference", "comm", "sub-chains"]
    rows = [header]
    for c in sorted(analysis.chains, key=lambda c: -c.priority):
        rows.append([c.name, str(c.priority), fmt_time(c.period), fmt_time(c.deadline),
                     fmt_bound(c), verdict(c), fmt_time(c.blocking), fmt_time(c.own_cpu),
                     fmt_time(c.handling), fmt_time(c.interference), fmt_time(c.communication),
                     " > ".join(s.executor for s in c.subchains)])
    return _table(rows, right={1, 2, 3, 4, 6, 7, 8, 9, 10})


def summary(analysis: Analysis) -> str:
    critical = [c for c in analysis.chains if not c.best_effort]
    missing = [c for c in critical if not c.schedulable]
    if not missing:
        return f"schedulable: all {len(critical)} critical chains meet their deadlines"
    lines = [f"NOT schedulable: {len(missing)} of {len(critical)} critical chains can miss"]
    for c in sorted(missing, key=lambda c: -c.priority):
        if math.isinf(c.wcrt):
            lines.append(f"  chain '{c.name}': bound unbounded (deadline {c.deadline:.3f} ms)")
        else:
            at_least = "" if c.converged else "at least "
            lines.append(f"  chain '{c.name}' misses its deadline {c.deadline:.3f} ms by "
                         f"{at_least}{c.wcrt - c.deadline:.3f} ms")
    return "\n".join(lines)


def comparison_table(before: Analysis | None, after: Analysis) -> str:
    """Bounds before and after planning, chain by chain."""
    rows = [["chain", "prio", "deadline", "before", "after", "verdict after"]]
    old = {c.name: c for c in before.chains} if before else {}
    for c in sorted(after.chains, key=lambda c: -c.priority):
        b = old.get(c.name)
        rows.append([c.name, str(c.priority), fmt_time(c.deadline),
                     fmt_bound(b) + ("" if b is None or b.schedulable else " MISS")
                     if b else "n/a", fmt_bound(c), verdict(c)])
    return _table(rows, right={1, 2, 3, 4})
