"""E0's Python stacks outside its callbacks, from py-spy's raw samples (e0_pyspy_raw.txt.xz:
`py-spy record -p <E0> --nonblocking -r 250 -d 60 -f raw`, on-CPU samples only).

    python profile.py > profile.txt
"""
import collections
import lzma

rows = []
with lzma.open("e0_pyspy_raw.txt.xz", "rt") as f:
    for line in f:
        stack, n = line.rsplit(" ", 1)
        rows.append((stack.split(";"), int(n)))
main = collections.Counter(fr[0] for fr, n in rows for _ in range(n)).most_common(1)[0][0]
kinds, incl, leaf, outside = collections.Counter(), collections.Counter(), collections.Counter(), 0
for fr, n in rows:
    if fr[0] != main:
        continue
    s = ";".join(fr)
    if "call (paam/eval/case_study2.py" in s:  # inside a callback (the recording wrapper)
        kinds["inside callbacks: the burn, GPU/TPU requests" if "request (paam/client.py" in s
              else "inside callbacks: the rest"] += n
        continue
    kinds["outside callbacks"] += n
    outside += n
    for name in dict.fromkeys(x.split(" (")[0] for x in fr):
        incl[name] += n
    leaf[fr[-1]] += n
print("samples of E0's main thread:", dict(kinds))
print(f"\noutside callbacks ({outside} samples), inclusive share per function:")
for k, v in incl.most_common(40):
    print(f"{v / outside * 100:5.1f}% {k}")
print("\noutside callbacks, innermost frame:")
for k, v in leaf.most_common(20):
    print(f"{v / outside * 100:5.1f}% {k}")
