"""Case study 2, 4ST, PAAM with and without --keep-awake on two lent H100 machines (A: four
330 s runs in the order keep-awake, plain, plain, keep-awake; C: plain then keep-awake, 150 s
each): the hot path, what the host stole, and whether paamd's slow requests fall where the host
took a whole vCPU away. Writes keep_awake.txt and fig_keep_awake.png beside this file.

Run: PYTHONPATH=<paam's python dir> python keep_awake.py
"""
from __future__ import annotations

import csv
import lzma
import json
from pathlib import Path

import numpy as np

from paam.eval import common

HERE = Path(__file__).resolve().parent
RUNS = ("A-keep-awake-1", "A-plain-1", "A-plain-2", "A-keep-awake-2", "C-plain", "C-keep-awake")
SLOW_MS = 30.0   # a GPU request (submitted -> woken) this slow is a stall, not queueing
CHUNK_MS = 90.0  # a CPU losing this much of one second to the host lost a whole host slice
NEAR_S = 1.5     # "near": within this of such a second (the samples' 1 s, both sides)


def rows(run: str, name: str) -> list[dict]:
    with lzma.open(HERE / run / name, "rt") as f:
        return list(csv.DictReader(f))


def analyse(run: str) -> dict:
    s = json.loads((HERE / run / "summary.json").read_text())["results"]["4ST"]["PAAM"]
    host = rows(run, "host_stat.csv.xz")
    cols = [k for k in host[0] if k.startswith("steal_ms_cpu")]
    t = np.array([float(h["t_s"]) for h in host])
    per_cpu = np.array([[float(h[k]) for k in cols] for h in host])
    chunk_t = t[(per_cpu >= CHUNK_MS).any(axis=1)]
    slow = np.array([float(r["t_s"]) for r in rows(run, "paam_stages_over_10ms.csv.xz")
                     if sum(float(v) for k, v in r.items() if k.endswith("_us")) > SLOW_MS * 1e3])

    def near(x: np.ndarray) -> np.ndarray:
        if not len(chunk_t):
            return np.zeros(len(x), bool)
        return (np.abs(x[:, None] - chunk_t[None, :]) <= NEAR_S).any(axis=1)

    # stalls: slow requests less than a second apart count once (one stall delays several)
    srt = np.sort(slow)
    events = srt[np.concatenate([[True], np.diff(srt) >= 1.0])] if len(srt) else srt
    grid = np.arange(t[0], t[-1], 0.1)
    lidar = s["lidar_samples"]
    hot = [float(r["latency_ms"]) for r in rows(run, "hot_path.csv.xz")]
    return {"run": run, "hp": s["hot_path_ms"], "hot": np.sort(hot), "drops": s["drops"]["total"],
            "skipped": 2 * lidar["expected_each"] - lidar["front"] - lidar["rear"],
            "busy": s["host"]["busy_ms_per_s"]["mean"], "steal": s["host"]["steal_ms_per_s"],
            "per_cpu": per_cpu[per_cpu > 0], "chunks": int((per_cpu >= CHUNK_MS).sum()),
            "slow": len(slow), "slow_near": int(near(slow).sum()),
            "events": len(events), "events_near": int(near(events).sum()),
            "base": float(near(grid).mean()) if len(grid) else float("nan")}


def main() -> None:
    res = [analyse(r) for r in RUNS]
    head = ["run", "n", "mean", "p99", "max", "drops", "lidar skipped", "busy ms/s",
            "steal ms/s mean / max", f"CPU-s >= {CHUNK_MS:g} ms stolen",
            f"requests > {SLOW_MS:g} ms", "near such a second", "stalls (1 s apart)", "near",
            "run time near one"]
    body = [[r["run"], str(r["hp"]["n"]), common.fmt(r["hp"]["mean"]), common.fmt(r["hp"]["p99"]),
             common.fmt(r["hp"]["max"]), str(r["drops"]), str(r["skipped"]),
             common.fmt(r["busy"], 0),
             f"{common.fmt(r['steal']['mean'], 0)} / {common.fmt(r['steal']['max'], 0)}",
             str(r["chunks"]), str(r["slow"]), str(r["slow_near"]), str(r["events"]),
             str(r["events_near"]), f"{r['base']:.0%}"]
            for r in res]
    # in the runs with such seconds: were the stalls placed at random in time, all would fall
    # near one with this chance
    chance = float(np.prod([r["base"] ** r["events"] for r in res if r["events"] and r["chunks"]]))
    text = ("hot path (ms), drops and lidar periods skipped per run; busy and steal: /proc/stat, "
            "all 16 CPUs; a request's time is submitted -> woken (paamd's stamps); near: within "
            f"{NEAR_S:g} s of a second in which one CPU lost >= {CHUNK_MS:g} ms to the host\n"
            + common.table([head] + body, right=range(1, 15)) + "\n"
            + "in the runs with such seconds, the chance that every stall falls near one, were "
            f"the stalls placed at random: {chance:.1g} (product of run time near one ** stalls)\n")
    (HERE / "keep_awake.txt").write_text(text)
    print(text)

    plt = common.pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for r in res:
        ka = "keep-awake" in r["run"]
        y = 1.0 - np.arange(len(r["hot"])) / len(r["hot"])
        a1.step(r["hot"], y, where="post", lw=1.2, ls="-" if ka else "--",
                color=("#d62728" if ka else "#1f77b4") if r["run"][0] == "A" else
                ("#ff9896" if ka else "#9ecae1"), label=r["run"])
        a2.hist(r["per_cpu"], bins=np.arange(5, 215, 10), histtype="step", lw=1.2,
                ls="-" if ka else "--", color=a1.lines[-1].get_color(), label=r["run"])
    a1.set_yscale("log")
    a1.set_xlabel("hot-path latency (ms)")
    a1.set_ylabel("share of instances slower")
    a1.legend(fontsize=7)
    a2.set_yscale("log")
    a2.set_xlabel("ms one CPU lost to the host in one second")
    a2.set_ylabel("CPU-seconds")
    a2.legend(fontsize=7)
    fig.suptitle("Case study 2, 4ST, PAAM, GPU 2.5 ms, lent H100s A and C, 2026-11-23: "
                 "--keep-awake (solid) against plain (dashed)", fontsize=9)
    common.save(fig, HERE / "fig_keep_awake.png")


if __name__ == "__main__":
    main()
