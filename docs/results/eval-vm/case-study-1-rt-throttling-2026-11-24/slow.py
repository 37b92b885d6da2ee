import re,sys,csv
d=sys.argv[1]; thr=float(sys.argv[2]) if len(sys.argv)>2 else 11
t0=int(open(f'{d}/t0_ns').read())/1e9
inst=[(float(r['t_s'])+t0-float(r['latency_ms'])/1e3, float(r['t_s'])+t0, float(r['latency_ms'])) for r in csv.DictReader(open(f'{d}/eval/latency.csv')) if r['chain']=='chain1']
slow=[i for i in inst if i[2]>thr]
pat=re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+): (\w+): (.*)$')
ev=[]
for line in open(f'{d}/trace.txt'):
    m=pat.match(line)
    if not m: continue
    ev.append((float(m.group(5)),int(m.group(3)),m.group(1),int(m.group(2)),m.group(4),m.group(6),m.group(7)))
print(len(ev),'events',len(slow),'slow')
import bisect
ts=[e[0] for e in ev]
for (a,b,lat) in slow:
    print(f"\n=== instance {a-t0:.3f}..{b-t0:.3f} s, {lat:.2f} ms")
    i=bisect.bisect_left(ts,a-0.0005); j=bisect.bisect_right(ts,b+0.0005)
    cur={0:None,1:None}; since={0:a,1:a}
    for e in ev[i:j]:
        t,cpu,comm,pid,flags,name,rest=e
        if name=='sched_switch':
            m=re.search(r'prev_comm=(.*) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+) next_prio=(\d+)',rest)
            dur=(t-since[cpu])*1e3
            print(f"{(t-a)*1e3:8.3f} cpu{cpu} {m.group(1)}/{m.group(2)} ran {dur:.3f} ms, state {m.group(4)} -> {m.group(5)}/{m.group(6)} p{m.group(7)}")
            since[cpu]=t
        elif name=='sched_wakeup':
            m=re.search(r'comm=(.*) pid=(\d+) prio=(\d+) target_cpu=(\d+)',rest)
            print(f"{(t-a)*1e3:8.3f} cpu{cpu} [{comm}/{pid} {flags}] wakes {m.group(1)}/{m.group(2)} on cpu{m.group(4)}")
        elif name=='hrtimer_expire_entry':
            print(f"{(t-a)*1e3:8.3f} cpu{cpu} hrtimer {rest}")
        elif name=='irq_handler_entry':
            print(f"{(t-a)*1e3:8.3f} cpu{cpu} irq {rest}")
