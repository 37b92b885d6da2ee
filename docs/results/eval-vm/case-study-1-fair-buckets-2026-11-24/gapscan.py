# global silences in a trace: intervals with no event on any CPU, and per-CPU silences
import re, sys
pat=re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+):')
t0=int(open(sys.argv[1]+'/t0_ns').read())/1e9
last=None; lastc={}; out=[]; percpu=[]
for line in open(sys.argv[1]+'/trace.txt', errors='replace'):
    m=pat.match(line)
    if not m: continue
    t=float(m.group(4)); c=int(m.group(3))
    if last is not None and t-last>0.010 and t0<=t<=t0+90: out.append((round((last-t0),3), round((t-last)*1e3,1)))
    if c in lastc and t-lastc[c]>0.010 and t0<=t<=t0+90: percpu.append((c, round(lastc[c]-t0,3), round((t-lastc[c])*1e3,1)))
    last=t; lastc[c]=t
print("no event on any CPU for > 10 ms:", out)
print("per CPU > 10 ms:", sorted(percpu, key=lambda x:-x[2])[:15])
