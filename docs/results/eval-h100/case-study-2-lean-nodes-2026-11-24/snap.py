"""Every thread's CPU share and context switches over a window, from /proc (diag.txt).

    python snap.py DELAY WINDOW    # sleep DELAY s, then measure over WINDOW s
"""
import os
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def _field(status: str, key: str) -> str:
    return status.split(key)[1].split()[0]


def snap() -> dict:
    """(pid, tid) -> (cmdline, comm, nice, policy, affinity, last CPU, CPU ticks, voluntary and
    involuntary switches)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:90]
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    st = f.read()
                comm = st[st.index("(") + 1:st.rindex(")")]
                x = st[st.rindex(")") + 2:].split()
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    s = f.read()
                out[(int(pid), int(tid))] = (
                    cmd, comm, int(x[16]), int(x[38]), _field(s, "Cpus_allowed_list:"),
                    int(x[36]), int(x[11]) + int(x[12]),
                    int(_field(s, "\nvoluntary_ctxt_switches:")),
                    int(_field(s, "nonvoluntary_ctxt_switches:")))
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            pass
    return out


def main() -> None:
    time.sleep(float(sys.argv[1]))
    a = snap()
    t = time.time()
    time.sleep(float(sys.argv[2]))
    b = snap()
    dt = time.time() - t
    rows = []
    for k, v in b.items():
        if k in a:
            cpu = (v[6] - a[k][6]) / HZ / dt * 100
            if cpu > 0.5 or v[8] - a[k][8] > 50:
                rows.append((cpu, k, v, v[7] - a[k][7], v[8] - a[k][8]))
    rows.sort(key=lambda r: -r[0])
    print(f"window {dt:.1f} s: %cpu, pid/tid, comm, nice, policy, affinity, last cpu, vol/s, "
          "invol/s, cmd")
    for cpu, k, v, vol, inv in rows[:40]:
        print(f"{cpu:6.1f} {k[0]}/{k[1]} {v[1]:16s} ni={v[2]:3d} pol={v[3]} aff={v[4]:8s} "
              f"on={v[5]:2d} vol/s={vol / dt:7.0f} inv/s={inv / dt:6.0f} {v[0][:70]}")


if __name__ == "__main__":
    main()
