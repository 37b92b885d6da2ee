"""The host's steal over one machine's whole sequence of runs, from the /proc/stat samples that
scripts/device_long_run.sh takes every second: steal of all CPUs and busy time of paamd's cores
(0, 1, 8-15; under case study 1's PAAM, `--server-poll-us always` keeps them busy, which marks
when paamd ran there). B: case study 1's three methods, then MT PAAM, PiCAS, ROS 2. C: MT
PAAM with the default waits and with every wait spinning, alternating. Also the twenty-eighth
session's machines D and E (../steal-alternating-2026-11-25/D, E): MT PAAM and PiCAS alternating
(on E also PAAM with spinning clients).

    python steal_sequence.py B     # writes B/fig_steal_sequence.png and B/steal_sequence.txt
    python steal_sequence.py ../steal-alternating-2026-11-25/D   # a folder beside this one
"""
import gzip
import sys
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

here = (Path(__file__).parent / (sys.argv[1] if len(sys.argv) > 1 else "B")).resolve()
TICK_MS = 10  # USER_HZ 100
PAAMD_CPUS = [0, 1] + list(range(8, 16))

samples = []  # (t, {cpu: [fields]})
t = None
for line in gzip.open(here / "proc-stat.txt.gz", "rt"):
    f = line.split()
    if f[0] == "t":
        t = int(f[1])
        samples.append((t, {}))
    elif f[0].startswith("cpu") and samples:
        samples[-1][1][f[0]] = [int(x) for x in f[1:]]
rows = []  # (t, steal ms/s all CPUs, busy ms/s on paamd's cores)
for (t0, a), (t1, b) in zip(samples, samples[1:]):
    if "cpu" not in a or "cpu" not in b or t1 <= t0:
        continue
    steal = (b["cpu"][7] - a["cpu"][7]) * TICK_MS / (t1 - t0)
    busy = 0
    for c in PAAMD_CPUS:
        x, y = a.get(f"cpu{c}"), b.get(f"cpu{c}")
        if x and y:
            busy += (sum(y[:3]) + sum(y[5:8]) - sum(x[:3]) - sum(x[5:8])) * TICK_MS / (t1 - t0)
    rows.append((t1, steal, busy))

runs = []
for line in (here / "device" / "progress").read_text().splitlines():
    f = line.split()
    if len(f) >= 3 and f[1] == "start":
        runs.append([f[0], int(f[2]), None])
    elif len(f) >= 3 and f[1] == "end":
        next(r for r in runs if r[0] == f[0])[2] = int(f[2])
start = rows[0][0]

lines = ["run        minute:  mean ms/s stolen from all 16 CPUs (busy ms/s on paamd's cores)"]
for name, a, b in runs:
    per_min = []
    for m in range(a, b, 60):
        w = [(s, u) for tt, s, u in rows if m <= tt < min(m + 60, b)]
        if w:
            steal, busy = sum(s for s, _ in w) / len(w), sum(u for _, u in w) / len(w)
            per_min.append(f"{steal:.0f} ({busy:.0f})")
    whole = [s for tt, s, _ in rows if a <= tt < b]
    lines.append(f"{name:<9} mean {sum(whole) / len(whole):5.0f} | " + ", ".join(per_min))
text = "\n".join(lines)
print(text)
(here / "steal_sequence.txt").write_text(text + "\n")

fig, ax = plt.subplots(figsize=(10, 3.8))
w = 10  # seconds per point
xs, st, bu = [], [], []
for i in range(0, len(rows) - w + 1, w):
    chunk = rows[i:i + w]
    xs.append((chunk[-1][0] - start) / 60)
    st.append(sum(r[1] for r in chunk) / w)
    bu.append(sum(r[2] for r in chunk) / w)
ax.plot(xs, st, color="tab:red", label="stolen from all CPUs (ms/s, 10 s means)")
ax2 = ax.twinx()
ax2.plot(xs, [b / 1000 for b in bu], color="tab:blue", alpha=0.5,
         label="paamd's cores busy (CPUs, right axis)")
ax2.set_ylabel("CPUs busy on paamd's cores")
ax2.set_ylim(0, 12)
colors = {"cs1": "0.9", "mt-paam": "#cfe2f3", "mt-picas": "#e6d9f2", "mt-ros2": "#fde2c8",
          "a1": "#cfe2f3", "a2": "#cfe2f3", "s1": "#fde2c8", "s2": "#fde2c8",
          **{f"p{i}": "#cfe2f3" for i in (1, 2, 3)}, **{f"d{i}": "#e6d9f2" for i in (1, 2, 3)},
          "w1": "#d9ead3", "w2": "#d9ead3"}
names = {"cs1": "case study 1:\nROS 2, PiCAS, PAAM", "mt-paam": "MT PAAM",
         "mt-picas": "MT PiCAS", "mt-ros2": "MT ROS 2", "a1": "MT PAAM\ndefault waits",
         "a2": "MT PAAM\ndefault waits", "s1": "MT PAAM\nall waits spin",
         "s2": "MT PAAM\nall waits spin",
         **{f"p{i}": "MT PAAM" for i in (1, 2, 3)}, **{f"d{i}": "MT PiCAS" for i in (1, 2, 3)},
         "w1": "MT PAAM\nclients spin", "w2": "MT PAAM\nclients spin"}
for name, a, b in runs:
    ax.axvspan((a - start) / 60, (b - start) / 60, color=colors.get(name, "0.95"), zorder=0)
    ax.text(((a + b) / 2 - start) / 60, 690, names.get(name, name),
            ha="center", va="top", fontsize=8)
ax.set_xlabel(f"minutes since the runs began (machine {here.name}, H100, 2026-11-25)")
ax.set_ylabel("ms per s")
ax.set_ylim(0, 700)
h1, l1 = ax.get_legend_handles_labels()
h2, l2 = ax2.get_legend_handles_labels()
ax.legend(h1 + h2, l1 + l2, loc="center right", fontsize=8)
ax.set_title(f"Machine {here.name}: the host's steal over the sequence of runs", fontsize=10)
fig.tight_layout()
fig.savefig(here / "fig_steal_sequence.png", dpi=110)
