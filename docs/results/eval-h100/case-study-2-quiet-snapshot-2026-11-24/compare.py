"""The three methods per setup from the runs' summary.json files: the KPI, the reductions
against ROS 2 and PiCAS, drops, and the hot path from the lidar timers' due time.

    python compare.py > compare.txt
"""
import json
import pathlib

HERE = pathlib.Path(__file__).parent
RUNS = {"4ST": ("s_ros2", "s_ros2b", "s_picas", "s_paam", "s_paam2"),
        "MT": ("m_ros2", "m_picas", "m_paam")}


def load(run):
    d = json.loads((HERE / run / "summary.json").read_text())
    (setup, by_method), = d["results"].items()
    (method, r), = by_method.items()
    return method, r, d["results"][setup][method]["host"]


for setup, runs in RUNS.items():
    print(f"{setup}: run, method, n, KPI min / p50 / p99 / max (ms), drops (instances), "
          "lidar activations skipped, from the due time p50 / max (ms), "
          "ms/s stolen (all CPUs / the executors' cores, mean)")
    rows = {}
    for run in runs:
        method, r, host = load(run)
        h, due = r["hot_path_ms"], r["hot_path_from_due_ms"]
        skipped = 2 * r["lidar_samples"]["expected_each"] - r["lidar_samples"]["front"] \
            - r["lidar_samples"]["rear"]
        rows.setdefault(method, []).append((run, h["max"], due["max"]))
        print(f"  {run:8s} {method:6s} {h['n']:5d}  {h['min']:6.1f} {h['p50']:6.1f} "
              f"{h['p99']:6.1f} {h['max']:6.1f}  {r['drops']['total']:4d} "
              f"({r['drops']['instances_with_drops']})  {skipped:5d}  "
              f"{due['p50']:6.1f} {due['max']:6.1f}  "
              f"{host['steal_ms_per_s']['mean']:.0f} / "
              f"{host['steal_ms_per_s_executor_cpus']['mean']:.0f}")
    print(f"  {setup} reductions of PAAM's maximum (KPI; from the due time):")
    for prun, pmax, pdue in rows["PAAM"]:
        for base in ("ROS 2", "PiCAS"):
            for brun, bmax, bdue in rows[base]:
                print(f"    {prun} against {brun}: {100 * (pmax / bmax - 1):+.1f}% "
                      f"({100 * (pdue / bdue - 1):+.1f}%)")
    print()
