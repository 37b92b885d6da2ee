"""``paam trace --plot``: the recorded requests as a timeline picture — one row per lane of
paamd (its requests from picked to completed, light, with the kernel on the device solid) and
one row per client (submitted to completed), every request colored by its client."""
from __future__ import annotations

from typing import Any, Iterable

from .trace_events import STAMPS


def plot_timeline(records: Iterable[dict[str, Any]], path: str, *, title: str = "",
                  width_in: float = 11.0, dpi: int = 100) -> int:
    """Draws the timeline into path (any format matplotlib writes; PNG by its name) and
    returns the number of requests drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    recs = [r for r in records if int(r.get("submitted") or 0) > 0
            and int(r.get("completed") or 0) >= int(r["submitted"])]
    stamps = [int(r[s]) for r in recs for s in STAMPS if int(r.get(s) or 0) > 0]
    origin = min(stamps) if stamps else 0

    def ms(ns: int) -> float:
        return (int(ns) - origin) / 1e6

    clients = sorted({(int(r["client"]), r.get("client_name") or f"client {r['client']}",
                       int(r["priority"])) for r in recs}, key=lambda c: (-c[2], c[0]))
    lanes = sorted({(int(r["unit"]), int(r["bucket"]), int(r["lane"])) for r in recs
                    if int(r.get("picked") or 0) > 0})
    cmap = plt.get_cmap("tab10")
    color = {cid: cmap(i % 10) for i, (cid, _, _) in enumerate(clients)}
    rows = [f"unit {u} bucket {b} lane {ln}" for u, b, ln in lanes] + \
           [f"{name} (prio {prio})" for _, name, prio in clients]
    lane_row = {k: i for i, k in enumerate(lanes)}
    client_row = {cid: len(lanes) + i for i, (cid, _, _) in enumerate(clients)}

    fig, ax = plt.subplots(figsize=(width_in, 1.2 + 0.45 * max(1, len(rows))), dpi=dpi)
    # One broken_barh call per (row, client, kind): a few artists however many requests.
    bars: dict[tuple[int, int, str], list[tuple[float, float]]] = {}
    for r in recs:
        cid = int(r["client"])
        bars.setdefault((client_row[cid], cid, "client"), []).append(
            (ms(r["submitted"]), ms(r["completed"]) - ms(r["submitted"])))
        if int(r.get("picked") or 0) > 0:
            row = lane_row[(int(r["unit"]), int(r["bucket"]), int(r["lane"]))]
            bars.setdefault((row, cid, "lane"), []).append(
                (ms(r["picked"]), ms(r["completed"]) - ms(r["picked"])))
            if int(r.get("device_start") or 0) > 0 and \
                    int(r.get("device_end") or 0) >= int(r["device_start"]):
                bars.setdefault((row, cid, "device"), []).append(
                    (ms(r["device_start"]), ms(r["device_end"]) - ms(r["device_start"])))
    style = {"client": (0.55, 0.6), "lane": (0.25, 0.7), "device": (1.0, 0.7)}
    for (row, cid, kind), spans in bars.items():
        alpha, height = style[kind]
        ax.broken_barh(spans, (row - height / 2, height), facecolors=color[cid], alpha=alpha,
                       linewidth=0)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=8)
    ax.set_ylim(max(1, len(rows)) - 0.5, -0.5)  # lanes on top, then clients by priority
    if lanes and clients:
        ax.axhline(len(lanes) - 0.5, color="0.6", linewidth=0.8)
    ax.set_xlabel("time since the first stamp (ms)")
    ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    handles = [Patch(facecolor=color[cid], label=f"{name} (prio {prio})")
               for cid, name, prio in clients]
    if handles:  # beside the plot, where it hides no request
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7,
                  title="client", title_fontsize=7, frameon=False)
    ax.set_title(title or f"{len(recs)} requests: lanes (light: picked→completed, solid: kernel "
                 "on the device) and clients (submitted→completed)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return len(recs)
