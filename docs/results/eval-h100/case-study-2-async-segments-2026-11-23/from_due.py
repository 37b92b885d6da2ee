"""Case study 2's hot path at 2.5 ms GPU segments, measured from the later lidar timer's due
time instead of its callback's start (the reference system's KPI), for the earlier H100 runs
that predate the lidar_late_ms column: the eighth session's 600 s runs and the ninth session's
keep-awake runs, beside this session's. The timers are reset together at the runs' clock origin
(t_s = 0) and rcl keeps them on their 100 ms grid, so the due time is the last multiple of
100 ms before the callback's start (t_s - latency); checked against the measured column on the
VM (within 0.3 ms). Writes from_due.txt beside this file.

Run: python from_due.py   (numpy)
"""
from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
UP = HERE.parent
RUNS = [(f"600s-2026-11-23/{m}", UP / "case-study-2-4st-600s-2026-11-23" / m)
        for m in ("paam", "picas", "ros2")]
RUNS += [(f"keep-awake-2026-11-23/{r}", UP / "case-study-2-4st-keep-awake-2026-11-23" / r)
         for r in ("A-plain-1", "A-plain-2", "A-keep-awake-1", "A-keep-awake-2", "C-plain",
                   "C-keep-awake")]
RUNS += [(f"this session/{r}", HERE / r)
         for r in ("D-sync-1", "D-sync-2", "D-async-1", "D-async-2", "D-picas", "D-ros2",
                   "E-sync", "E-async-1", "E-async-2")]


def main() -> None:
    head = ("run", "method", "n", "KPI p50 / p99 / max", "late p50 / p90",
            "from due p50 / p99 / max")
    table = [head]
    for name, path in RUNS:
        with gzip.open(path / "hot_path.csv.gz", "rt") as f:
            rows = list(csv.DictReader(f))
        lat = np.array([float(r["latency_ms"]) for r in rows])
        late = np.mod(np.array([float(r["t_s"]) for r in rows]) * 1e3 - lat, 100.0)
        due = lat + late

        def q(a: np.ndarray) -> str:
            return f"{np.median(a):.0f} / {np.percentile(a, 99):.0f} / {a.max():.0f}"
        table.append((name, rows[0]["method"], str(len(rows)), q(lat),
                      f"{np.median(late):.0f} / {np.percentile(late, 90):.0f}", q(due)))
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    text = "\n".join(lines) + "\n"
    (HERE / "from_due.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
