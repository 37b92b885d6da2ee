"""Case study 2 at 2.5 ms GPU segments on lent H100 machines D and E, PAAM's callbacks holding
their executor through each segment (--segments sync, the default) or awaiting it (--segments
async), beside PiCAS and ROS 2 on D; and on machine F, MT with Python's collector frozen (--gc
freeze). Prints the table in async_segments.txt and draws fig_async_segments.png beside this
file; from_due.txt redoes the earlier sessions' 2.5 ms runs (the eighth session's 600 s runs, the
ninth session's keep-awake runs) from the later lidar timer's due time.

"Earlier branch done first": the share of instances whose earlier lidar's points transformer
ended before the later lidar's stamp (the instance's start), i.e. the two branches did not
overlap.

"Later lidar late": how long after its timer was due the later lidar's callback started (the
reference system's hot path starts at that callback's start, so its latency leaves this out).
These runs predate the lidar_late_ms column, so it is computed here: the timers are reset
together at the runs' clock origin (t_s = 0) and rcl keeps them on their 100 ms grid, so the
due time is the last multiple of 100 ms before the callback's start (t_s - latency). Checked
against the measured column on the VM: within 0.3 ms. "From due" = latency + that.

Run: python async_segments.py   (numpy and matplotlib)
"""
from __future__ import annotations

import csv
import lzma
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
# (run folder, machine, segments, code)
RUNS = (("D-async-1", "D", "async", "979af0c"), ("D-sync-1", "D", "sync", "979af0c"),
        ("D-sync-2", "D", "sync", "979af0c"), ("D-async-2", "D", "async", "979af0c"),
        ("D-picas", "D", "-", "979af0c"), ("D-ros2", "D", "-", "979af0c"),
        ("E-async-1", "E", "async", "67a6ce6"), ("E-sync", "E", "sync", "67a6ce6"),
        ("E-async-2", "E", "async", "67a6ce6"), ("E-MT-sync", "E", "sync", "67a6ce6"),
        ("E-MT-async", "E", "async", "67a6ce6"), ("F-MT-gc-freeze", "F", "sync", "9f69d27"))


def load(run: str) -> tuple[str, str, dict, np.ndarray, np.ndarray, np.ndarray]:
    res = json.loads((HERE / run / "summary.json").read_text())["results"]
    (setup, by_method), = res.items()
    (method, s), = by_method.items()
    with lzma.open(HERE / run / "hot_path.csv.xz", "rt") as f:
        rows = list(csv.DictReader(f))
    lat = np.array([float(r["latency_ms"]) for r in rows])
    late = np.mod(np.array([float(r["t_s"]) for r in rows]) * 1e3 - lat, 100.0)
    ends = np.array([[float(r["PointsTransformerFront_end_ms"] or "nan"),
                      float(r["PointsTransformerRear_end_ms"] or "nan")] for r in rows])
    return setup, method, s, lat, ends, late


# the earlier sessions' 2.5 ms runs, for from_due.txt
EARLIER = [(f"600s-2026-11-23/{m}", HERE.parent / "case-study-2-4st-600s-2026-11-23" / m)
           for m in ("paam", "picas", "ros2")]
EARLIER += [(f"keep-awake-2026-11-23/{r}",
             HERE.parent / "case-study-2-4st-keep-awake-2026-11-23" / r)
            for r in ("A-plain-1", "A-plain-2", "A-keep-awake-1", "A-keep-awake-2", "C-plain",
                      "C-keep-awake")]


def write_table(table: list, path: Path) -> None:
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(wd) for c, wd in zip(r, widths)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * wd for wd in widths))
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    print(text)


def from_due() -> None:
    """from_due.txt: the KPI, the later lidar callback's lateness and the hot path from the due
    time, for the earlier sessions' runs and this session's 4ST runs."""
    runs = EARLIER + [(f"this session/{r[0]}", HERE / r[0]) for r in RUNS
                      if r[0].startswith(("D-", "E-")) and "MT" not in r[0]]
    table = [("run", "method", "n", "KPI p50 / p99 / max", "late p50 / p90",
              "from due p50 / p99 / max")]
    for name, path in runs:
        with lzma.open(path / "hot_path.csv.xz", "rt") as f:
            rows = list(csv.DictReader(f))
        lat = np.array([float(r["latency_ms"]) for r in rows])
        late = np.mod(np.array([float(r["t_s"]) for r in rows]) * 1e3 - lat, 100.0)

        def q(a: np.ndarray) -> str:
            return f"{np.median(a):.0f} / {np.percentile(a, 99):.0f} / {a.max():.0f}"
        table.append((name, rows[0]["method"], str(len(rows)), q(lat),
                      f"{np.median(late):.0f} / {np.percentile(late, 90):.0f}", q(lat + late)))
    write_table(table, HERE / "from_due.txt")


def main() -> None:
    head = ("run", "machine", "code", "setup", "method", "segments", "n", "min", "mean", "p99",
            "max", "drops", "lidar skipped", "GPU segment p50 / p99 ms", "hop 1 median",
            "later hops median", "earlier branch done first", "later lidar late p50",
            "from due p50 / p99 / max", "E0 collections in instances", "longest collection ms")
    table, box = [head], []
    for run, machine, segments, code in RUNS:
        setup, method, s, lat, ends, late = load(run)
        due = lat + late
        h, hops, gc = s["hot_path_ms"], s["hot_path_hops_ms"], s["gc"]
        lidar = s["lidar_samples"]
        skipped = 2 * lidar["expected_each"] - lidar["front"] - lidar["rear"]
        first_done = float(np.mean(np.nanmin(ends, axis=1) < 0)) if len(ends) else float("nan")
        later = sum(hops[k]["p50"] for k in hops if k != "lidar->transformers")
        longest = max(g["max_ms"] for p in gc["by_process"].values() for g in p.values())
        w = s["gpu_segment_wall_ms"]
        table.append((run, machine, code, setup, method, segments, str(h["n"]), f"{h['min']:.1f}",
                      f"{h['mean']:.1f}", f"{h['p99']:.1f}", f"{h['max']:.1f}",
                      str(s["drops"]["total"]), str(skipped), f"{w['p50']:.2f} / {w['p99']:.1f}",
                      f"{hops['lidar->transformers']['p50']:.1f}", f"{later:.1f}",
                      f"{100 * first_done:.0f}%", f"{np.median(late):.1f}",
                      f"{np.median(due):.0f} / {np.percentile(due, 99):.0f} / {due.max():.0f}",
                      f"{gc['hot_path']['during_a_collection']} of {gc['hot_path']['instances']}",
                      f"{longest:.1f}"))
        label = f"{run}\n{method}" + (f" {segments}" if segments != "-" else "")
        box.append((label, lat, due))
    write_table(table, HERE / "async_segments.txt")
    from_due()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(14, 5))
    pos = np.arange(1, len(box) + 1, dtype=float)
    ax.boxplot([b[1] for b in box], positions=pos - 0.18, whis=(0, 100), widths=0.32)
    due_parts = ax.boxplot([b[2] for b in box], positions=pos + 0.18, whis=(0, 100), widths=0.32,
                           patch_artist=True)
    for patch in due_parts["boxes"]:
        patch.set_facecolor("none")
        patch.set_hatch("//")
    ax.set_xticks(pos, [b[0] for b in box], fontsize=7)
    ax.set_ylabel("hot-path latency (ms), whiskers min / max")
    ax.set_title("Case study 2, 2.5 ms GPU segments, H100 machines D, E, F (2026-11-23): PAAM with "
                 "synchronous or awaited (async) segments\nleft: the reference system's KPI "
                 "(from the later lidar callback's start); hatched: from that timer's due time")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(HERE / "fig_async_segments.png", dpi=110)


if __name__ == "__main__":
    main()
