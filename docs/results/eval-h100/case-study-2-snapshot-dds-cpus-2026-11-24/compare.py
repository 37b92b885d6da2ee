"""Case study 2 on two lent H100 machines (README.txt): the three methods per setup from the
runs' summary.json files (KPI, reductions against ROS 2 and PiCAS, drops, the hot path from the
lidar timers' due time), and on P the --dds-cpus pairs with E0's time per instance.

    python compare.py > compare.txt
"""
import csv
import json
import lzma
import pathlib
import statistics

HERE = pathlib.Path(__file__).parent
THREE_METHODS = {"O 4ST": ("O/s_ros2", "O/s_ros2b", "O/s_picas", "O/s_paam", "O/s_paam2"),
                 "O MT": ("O/m_ros2", "O/m_picas", "O/m_paam"),
                 "P 4ST (all --dds-cpus spare but a_exec, b_exec)":
                     ("P/r_spare", "P/p_spare", "P/a_exec", "P/a_spare", "P/b_spare", "P/b_exec")}
PAIRS = ("P/a_exec", "P/a_spare", "P/b_spare", "P/b_exec", "P/m2_spare", "O/m_paam")
# E0's time per instance is counted from the lidar timers' due time: the later the lidar
# callbacks start, the more of the previous instance's callbacks the window holds
PER_CALLBACK = ("O/s_paam", "O/s_paam2", "O/m_paam") + PAIRS[:5]


def load(run):
    d = json.loads((HERE / run / "summary.json").read_text())
    (setup, by_method), = d["results"].items()
    (method, r), = by_method.items()
    return d["params"], method, r


def fmt(s):
    return f"{s['p50']:5.1f} / {s['p99']:5.1f} / {s['max']:5.1f}"


for title, runs in THREE_METHODS.items():
    print(f"{title}: run, method, n, KPI min / p50 / p99 / max (ms), drops (instances), "
          "lidar activations skipped, from the due time p50 / max (ms), ms/s stolen (all "
          "CPUs / the executors' cores, mean)")
    rows = {}
    for run in runs:
        _params, method, r = load(run)
        h, due, host = r["hot_path_ms"], r["hot_path_from_due_ms"], r["host"]
        lidar = r["lidar_samples"]
        skipped = 2 * lidar["expected_each"] - lidar["front"] - lidar["rear"]
        rows.setdefault(method, []).append((run, h["max"], due["max"]))
        print(f"  {run:11s} {method:6s} {h['n']:5d}  {h['min']:6.1f} {h['p50']:6.1f} "
              f"{h['p99']:6.1f} {h['max']:6.1f}  {r['drops']['total']:4d} "
              f"({r['drops']['instances_with_drops']})  {skipped:5d}  "
              f"{due['p50']:6.1f} {due['max']:6.1f}  "
              f"{host['steal_ms_per_s']['mean']:.0f} / "
              f"{host['steal_ms_per_s_executor_cpus']['mean']:.0f}")
    print("  reductions of PAAM's maximum (KPI; from the due time):")
    for prun, pmax, pdue in rows["PAAM"]:
        for base in ("ROS 2", "PiCAS"):
            for brun, bmax, bdue in rows[base]:
                print(f"    {prun} against {brun}: {100 * (pmax / bmax - 1):+.1f}% "
                      f"({100 * (pdue / bdue - 1):+.1f}%)")
    print()

print("PAAM by --dds-cpus (P: alternating 4ST pairs, then MT; O's MT run for comparison). KPI "
      "p50 / p99 / max where the host stole at most 50 ms/s around the instance (n) and where "
      "it stole more (n); E0 per instance, ms p50 / p99 / max: own CPU time outside callbacks, "
      "waiting for its core inside callbacks, CPU inside callbacks beyond the burn; the probe's "
      "C work, µs p50; E0's process's threads by core")
for run in PAIRS:
    params, method, r = load(run)
    steal = r["hot_path_by_host_steal"]
    split = r["hot_executor_from_due"]["outside_split"]
    probe = r["hot_executor_from_due"].get("cpu_probe", {}).get("probe_c_us")
    e0 = next(v for k, v in r["thread_cpus"].items() if k.startswith("E0")) \
        if r.get("thread_cpus") else {}
    print(f"  {run:11s} {params['setups']:3s} {params.get('dds_cpus', 'executor'):8s} "
          f"quiet {fmt(steal['quiet'])} ({steal['quiet']['n']}), "
          f"noisy {fmt(steal['noisy']) if steal['noisy']['n'] else 'n/a'} "
          f"({steal['noisy']['n']}), drops {r['drops']['total']}")
    print(f"      E0 outside {fmt(split['outside_cpu_ms'])}, waiting inside "
          f"{fmt(split['inside_runq_ms'])}, beyond the burn "
          f"{fmt(split['inside_beyond_burn_ms'])}, probe "
          + (f"{probe['p50']:.1f} µs" if probe else "not run")
          + f"; threads {e0 or 'not recorded'}")

print("\nE0's callbacks per instance window (from the due time), its own CPU time outside "
      "callbacks per callback (ms, p50 over instances) and how late the later lidar callback "
      "started (ms, p50)")
for run in PER_CALLBACK:
    with lzma.open(HERE / run / "hot_path.csv.xz", "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["e0_callbacks"] and float(r["e0_callbacks"])]
    calls = [float(r["e0_callbacks"]) for r in rows]
    per = [float(r["e0_outside_cpu_ms"]) / c for r, c in zip(rows, calls)]
    share = sum(c >= 12 for c in calls) / len(calls)
    print(f"  {run:11s} callbacks p50 {statistics.median(calls):4.1f}, 12 or more in "
          f"{100 * share:4.1f}% | outside per callback {statistics.median(per):.3f} | late "
          f"{statistics.median(float(r['lidar_late_ms']) for r in rows):5.1f}")
