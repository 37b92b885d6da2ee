"""Per-thread CPU and context switches over a window: python snap.py DELAY WINDOW"""
import os, sys, time
HZ = os.sysconf("SC_CLK_TCK")
def snap():
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        try:
            cmd = open(f"/proc/{pid}/cmdline","rb").read().replace(b"\0", b" ").decode(errors="replace")[:90]
            for tid in os.listdir(f"/proc/{pid}/task"):
                st = open(f"/proc/{pid}/task/{tid}/stat").read()
                comm = st[st.index("(")+1:st.rindex(")")]
                f = st[st.rindex(")")+2:].split()
                ut, stt, nice, proc, pol = int(f[11]), int(f[12]), int(f[16]), int(f[36]), int(f[38])
                s = open(f"/proc/{pid}/task/{tid}/status").read()
                vol = int(s.split("voluntary_ctxt_switches:")[1].split()[0])
                inv = int(s.split("nonvoluntary_ctxt_switches:")[1].split()[0])
                aff = s.split("Cpus_allowed_list:")[1].split()[0]
                out[(int(pid), int(tid))] = (cmd, comm, nice, pol, aff, proc, ut + stt, vol, inv)
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            pass
    return out
time.sleep(float(sys.argv[1]))
a = snap(); t = time.time(); time.sleep(float(sys.argv[2])); b = snap(); dt = time.time() - t
rows = []
for k, v in b.items():
    if k in a:
        u = a[k]
        cpu = (v[6] - u[6]) / HZ / dt * 100
        if cpu > 0.5 or v[8] - u[8] > 50:
            rows.append((cpu, k, v, v[7] - u[7], v[8] - u[8]))
rows.sort(key=lambda r: -r[0])
print(f"window {dt:.1f} s: %cpu, pid/tid, comm, nice, policy, affinity, last cpu, vol/s, invol/s, cmd")
for cpu, k, v, vol, inv in rows[:40]:
    print(f"{cpu:6.1f} {k[0]}/{k[1]} {v[1]:16s} ni={v[2]:3d} pol={v[3]} aff={v[4]:8s} on={v[5]:2d} vol/s={vol/dt:7.0f} inv/s={inv/dt:6.0f} {v[0][:70]}")
