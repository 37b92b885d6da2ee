"""Every H100 case-study summary kept under docs/results/eval-h100: what the host stole (ms per
s, mean over the run, from all CPUs and from the executors' CPUs) per method, and for the runs
that put PAAM beside other methods on one machine, whether PAAM's run saw the most steal.

    python3 steal_scan.py > steal_scan.txt
"""
import glob
import json
import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def hosts_of(summary: dict) -> dict:
    """{(setup, method): host summary}: case study 1 keeps one per method at the top, case
    study 2 one per setup and method under results."""
    out = {("cs1", m): h for m, h in (summary.get("host") or {}).items() if isinstance(h, dict)}
    for setup, by in (summary.get("results") or {}).items():
        for m, r in (by.items() if isinstance(by, dict) else ()):
            if isinstance(r, dict) and isinstance(r.get("host"), dict):
                out[(setup, m)] = r["host"]
    return out


def mean(h: dict, key: str):
    return (h.get(key) or {}).get("mean")


def num(v, fmt: str) -> str:
    return fmt % v if isinstance(v, (int, float)) else "n/a".rjust(len(fmt % 0))


runs: dict = {}
for path in sorted(glob.glob(os.path.join(ROOT, "**", "summary.json"), recursive=True)):
    with open(path) as f:
        summary = json.load(f)
    name = os.path.relpath(os.path.dirname(path), ROOT)
    for (setup, method), h in hosts_of(summary).items():
        runs.setdefault((name, setup), {})[method] = (
            mean(h, "steal_ms_per_s"), mean(h, "steal_ms_per_s_executor_cpus"))

print(f"{'run':58s} {'setup':5s} {'method':6s} {'steal':>6s} {'exec':>6s}")
for (name, setup), by in runs.items():
    for method, (st, ex) in by.items():
        print(f"{name[:58]:58s} {setup:5s} {method:6s} {num(st, '%6.1f')} {num(ex, '%6.1f')}")

beside = {k: by for k, by in runs.items() if "PAAM" in by and len(by) > 1}
for i, what in ((0, "all CPUs"), (1, "the executors' CPUs")):
    most = [k for k, by in beside.items()
            if all(by["PAAM"][i] is not None and o[i] is not None and by["PAAM"][i] > o[i]
                   for m, o in by.items() if m != "PAAM")]
    print(f"runs with PAAM beside other methods: {len(beside)}; "
          f"PAAM's run saw the most steal ({what}) in {len(most)}")
