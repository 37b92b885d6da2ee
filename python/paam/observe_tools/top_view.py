"""``paam top``'s screen: one statistics snapshot (the schema of :mod:`paam.observe`) as rich
renderables — a header with the server and its totals, the lanes with queue bars and latencies,
the clients by priority with their bound against the worst response seen, and the overheads the
analysis used against those observed."""
from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from . import fmt

BAR_CELLS = 12          # width of a queue-depth bar
BAR_FULL_AT_LEAST = 8   # a bar is full at this depth, or at the deepest queue if deeper
# A rule under the header and no column lines: compact on an 80-column terminal, and drawn
# the same by every terminal font.
TABLE_BOX = box.SIMPLE_HEAD


def queue_bar(depth: int, full: int, cells: int = BAR_CELLS) -> Text:
    """A bar of `cells` cells filled depth/full of the way, then the depth itself."""
    filled = 0 if full <= 0 else min(cells, round(cells * depth / full))
    if depth > 0:
        filled = max(filled, 1)  # any waiting request shows
    style = "red" if depth >= full else "yellow" if filled > cells // 2 else "green"
    bar = Text("█" * filled, style=style)
    bar.append("·" * (cells - filled), style="dim")
    bar.append(f" {depth}")
    return bar


def clients_by_priority(clients: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The most critical first (a larger priority is more critical), then by id."""
    return sorted(clients, key=lambda c: (-int(c["priority"]), int(c["id"])))


def _header(snap: dict[str, Any]) -> Text:
    srv, tot = snap["server"], snap["totals"]
    t = Text()
    t.append("paamd ", style="bold")
    t.append(f"pid {srv['pid']}  {srv['backend']}  {srv['units']} unit(s) × {srv['buckets']} "
             f"bucket(s)  admission {srv['admission']}  clients {tot['active_clients']}  "
             f"up {fmt.uptime(srv['uptime_s'])}  window {srv['window_s']:g} s\n")
    t.append(f"socket {srv['socket']}\n", style="dim")
    t.append(f"requests: {tot['requests_completed']} completed  {tot['requests_failed']} failed  "
             f"{tot['requests_cancelled']} cancelled   registrations {tot['registrations']}  "
             f"reaped {tot['clients_reaped']}  protocol errors {tot['protocol_errors']}  ")
    v = int(snap.get("violations_total", 0))
    t.append(f"bound violations {v}", style="bold red" if v else "green")
    return t


def lanes_table(snap: dict[str, Any]) -> Table:
    lanes = sorted(snap["lanes"], key=lambda l: (l["unit"], l["bucket"], l["lane"]))
    full = max([BAR_FULL_AT_LEAST, *(int(l["queue_depth"]) for l in lanes)])
    t = Table(title="lanes (bucket 0 is the most urgent)", title_justify="left", expand=False,
              box=TABLE_BOX)
    for name, just in (("unit", "right"), ("bucket", "right"), ("lane", "right"),
                       ("queue", "left"), ("run", "right"), ("served", "right"),
                       ("failed", "right"), ("p50", "right"), ("p99", "right"),
                       ("max", "right"), ("busy", "right")):
        t.add_column(name, justify=just, no_wrap=True)
    for l in lanes:
        total = l["stages_us"]["total"]
        failed = int(l.get("failed", 0))
        t.add_row(str(l["unit"]), str(l["bucket"]), str(l["lane"]),
                  queue_bar(int(l["queue_depth"]), full),
                  Text("●", style="bold green") if l["in_flight"] else Text("·", style="dim"),
                  str(l["served"]), Text(str(failed), style="red" if failed else ""),
                  fmt.us(total["p50"] if total["n"] else None),
                  fmt.us(total["p99"] if total["n"] else None),
                  fmt.us(total["max"] if total["n"] else None),
                  fmt.share(l["busy_share"]))
    return t


def clients_table(snap: dict[str, Any]) -> Table:
    t = Table(title="clients (most critical first; latency submit→completed)",
              title_justify="left", expand=False, box=TABLE_BOX)
    for name in ("name", "pid", "uid", "prio", "bucket", "requests", "p50", "p99",
                 "bound", "worst", "violations"):
        t.add_column(name, justify="left" if name == "name" else "right", no_wrap=name != "name")
    for c in clients_by_priority(snap["clients"]):
        lat = c["latency_us"]
        violations = int(c.get("violations", 0))
        bound, worst = c.get("bound_ms"), c.get("worst_observed_ms")
        over = bound is not None and worst is not None and worst > bound
        requests = str(c["requests"]) + (f" ({c['failed']} failed)" if c.get("failed") else "")
        name = c["name"] or f"client {c['id']}"
        t.add_row(Text(name, style="bold red" if violations else ""), str(c["pid"]),
                  str(c["uid"]), str(c["priority"]), str(c["bucket"]), requests,
                  fmt.us(lat["p50"] if lat["n"] else None),
                  fmt.us(lat["p99"] if lat["n"] else None),
                  fmt.ms(bound), Text(fmt.ms(worst), style="bold red" if over else ""),
                  Text(str(violations), style="bold red" if violations else "green"))
    if not snap["clients"]:
        t.add_row(Text("no clients registered", style="dim"), *[""] * 10)
    return t


def overheads_table(snap: dict[str, Any]) -> Table:
    """ε (the server's per-request overhead) and κ (the executor's) as the analysis took them
    and as measured now (p99 over the window); observed above used means the bounds rest on
    an optimistic input and the analysis should run again with the observed value."""
    t = Table(title="overheads: used by the analysis, observed", title_justify="left",
              expand=False, box=TABLE_BOX, min_width=44)
    for name in ("", "used", "observed p99", ""):
        t.add_column(name, justify="right" if name else "left", no_wrap=True)
    ov = snap.get("overheads", {})
    for key, label in (("epsilon_ms", "ε"), ("kappa_ms", "κ")):
        pair = ov.get(key) or {}
        used, seen = pair.get("used"), pair.get("observed_p99")
        stale = used is not None and seen is not None and seen > used
        t.add_row(label, fmt.ms(used), Text(fmt.ms(seen), style="bold yellow" if stale else ""),
                  Text("above the analysis' value: re-run it", style="yellow") if stale else "")
    return t


def render(snap: dict[str, Any], *, note: str | None = None) -> Group:
    """The whole screen for one snapshot; `note` (e.g. why the last refresh failed, or the key
    help) goes at the bottom."""
    parts: list[Any] = [_header(snap), lanes_table(snap), clients_table(snap),
                        overheads_table(snap)]
    if note:
        parts.append(Text(note, style="dim"))
    return Group(*parts)
