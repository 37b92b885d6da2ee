"""On each CPU a SCHED_FIFO thread sleeps 1 ms at a time and records how late each wake-up
came; late wake-ups (> 5 ms) on every CPU at the same moment mean the whole guest was stopped."""
import os, sys, time, threading, json
dur=float(sys.argv[1]); res={}
def probe(cpu):
    os.sched_setaffinity(0,{cpu}); os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(95))
    late=[]; end=time.monotonic()+dur; t0=time.monotonic()
    while True:
        a=time.monotonic()
        if a>end: break
        time.sleep(0.001)
        b=time.monotonic()
        if b-a>0.006: late.append((round(a-t0,3), round((b-a-0.001)*1e3,1)))
    res[cpu]=late
th=[threading.Thread(target=probe,args=(c,)) for c in sorted(os.sched_getaffinity(0))]
[t.start() for t in th]; [t.join() for t in th]
print(json.dumps(res))
