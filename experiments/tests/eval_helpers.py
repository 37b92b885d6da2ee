"""What several of the experiments' test files share: running the ``paam`` command line, and
reading a cpu list such as ``0-1,6-14``."""
import subprocess
import sys


def _paam(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "paam.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def _cpus(ranges: str) -> list[int]:
    out = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out

