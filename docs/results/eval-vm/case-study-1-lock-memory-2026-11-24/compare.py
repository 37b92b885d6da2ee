"""The runs of this folder in the order they ran: chain 1's maximum and p99, and the page faults
of the executors and of paamd in the measured 60 s; then per variant how many runs had an
instance over 20 ms. python3 compare.py > compare.txt"""
import glob
import re

VARIANT = {"nolock": "N", "lock": "B"}  # the first ten runs: none locked, or both
NAMES = {"N": "nothing locked", "E": "the executors locked", "S": "paamd locked",
         "B": "both locked"}
rows = []
for path in glob.glob("*/summary.txt"):
    run = path.split("/")[0]
    text = open(path).read()
    when = re.search(r"(\d\d:\d\d:\d\d) UTC|, (2026-\d\d-\d\d)", text)
    chain1 = re.search(r"^chain1\s+\S+\s+([\d.]+) / ([\d.]+)", text, re.M)
    faults = re.search(r"PAAM (\d+) minor / \d+ major \(most in one executor: \d+; "
                       r"paamd (\d+) minor", text)
    kind = "B" if run.startswith("tB") else VARIANT.get(run.split("-")[0], run.split("-")[0])
    rows.append((run, kind, float(chain1.group(1)), float(chain1.group(2)),
                 int(faults.group(1)), int(faults.group(2))))
order = {r: i for i, r in enumerate(open("order.txt").read().split())}
rows.sort(key=lambda r: order.get(r[0], 99))
print("run        variant  chain1 max / p99 (ms)  faults: executors / paamd")
for run, kind, mx, p99, ex, srv in rows:
    print(f"{run:10s} {kind:7s}  {mx:6.1f} / {p99:4.1f}           {ex:5d} / {srv}")
print()
for kind in "NESB":
    mxs = sorted(r[2] for r in rows if r[1] == kind)
    print(f"{NAMES[kind]:22s} ({kind}): {len(mxs)} runs, {sum(m > 20 for m in mxs)} with chain 1 "
          f"over 20 ms; maxima {', '.join(f'{m:.1f}' for m in mxs)}")
