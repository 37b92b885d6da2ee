import sys, numpy as np, pandas as pd
# usage: python steal_vs_cpu.py t4 [E0_CPU]: reads DIR/hot_path.csv.xz and DIR/host_stat.csv.xz
d = sys.argv[1]
hp = pd.read_csv(f"{d}/hot_path.csv.xz"); hs = pd.read_csv(f"{d}/host_stat.csv.xz")
cpu = int(sys.argv[2]) if len(sys.argv) > 2 else 2
for method in ["PiCAS", "PAAM"]:
    h = hp[hp.method == method].copy(); s = hs[hs.method == method]
    if h.e0_outside_cpu_ms.isna().all(): continue
    # steal on E0's cpu in the second containing the instance end (t_s) and the one before
    st = np.interp(h.t_s, s.t_s, s[f"steal_ms_cpu{cpu}"])
    st_prev = np.interp(h.t_s - 1, s.t_s, s[f"steal_ms_cpu{cpu}"])
    h["steal"] = np.maximum(st, st_prev)
    q = h.e0_outside_cpu_ms.quantile(0.99)
    top = h[h.e0_outside_cpu_ms >= q]; rest = h[h.e0_outside_cpu_ms < q]
    print(f"{method}: n {len(h)}, outside CPU p50 {h.e0_outside_cpu_ms.median():.1f}, top1% >= {q:.1f} ms (n {len(top)})")
    print(f"  steal on cpu{cpu} (max of the two seconds) in top1%: mean {top.steal.mean():.0f} ms/s, share with >0: {(top.steal>0).mean():.2f}; rest: mean {rest.steal.mean():.0f}, share >0 {(rest.steal>0).mean():.2f}")
    print(f"  corr(outside cpu, steal) {np.corrcoef(h.e0_outside_cpu_ms, h.steal)[0,1]:.2f}; corr(latency, outside cpu) {np.corrcoef(h.latency_ms, h.e0_outside_cpu_ms)[0,1]:.2f}")
    # instances in seconds with zero steal on cpu
    z = h[h.steal == 0]
    print(f"  seconds without steal on cpu{cpu}: n {len(z)}, outside CPU p99 {z.e0_outside_cpu_ms.quantile(.99):.1f} max {z.e0_outside_cpu_ms.max():.1f}; KPI p99 {z.latency_ms.quantile(.99):.1f} max {z.latency_ms.max():.1f}")
    print(f"  with steal: n {len(h)-len(z)}, outside CPU p99 {h[h.steal>0].e0_outside_cpu_ms.quantile(.99):.1f} max {h[h.steal>0].e0_outside_cpu_ms.max():.1f}; KPI p99 {h[h.steal>0].latency_ms.quantile(.99):.1f} max {h[h.steal>0].latency_ms.max():.1f}")
