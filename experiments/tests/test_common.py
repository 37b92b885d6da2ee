"""The experiments' common helpers: cores and threads (common.cpus), the host's /proc/stat
(common.host), child processes (common.procs), the collector's pauses (common.collector), the
machine's lines (common.machine), --methods (common.methods) and --lock-memory."""
import os
import subprocess
import sys
import time

import pytest

from eval_helpers import _cpus


def test_cpu_ranges_round_trip():
    from paam_experiments.common.cpus import cpu_ranges
    assert cpu_ranges([14, 0, 1, 6, 7, 8, 9, 10, 11, 12, 13]) == "0-1,6-14"
    assert cpu_ranges([3]) == "3" and cpu_ranges([]) == ""
    assert cpu_ranges([5, 1, 2, 3, 9]) == "1-3,5,9"
    assert _cpus(cpu_ranges([0, 2, 3, 4, 7])) == [0, 2, 3, 4, 7]


def test_thread_cpus_counts_threads_by_their_affinity():
    """thread_cpus: this process's threads by the cores they may run on, a thread pinned
    to one core under that core, the calling thread left out."""
    import threading

    from paam_experiments.common.cpus import cpu_ranges, thread_cpus
    allowed = sorted(os.sched_getaffinity(0))
    core = allowed[-1]
    pinned, release = threading.Event(), threading.Event()

    def pin_and_wait():
        os.sched_setaffinity(0, {core})
        pinned.set()
        release.wait(10)

    t = threading.Thread(target=pin_and_wait)
    t.start()
    try:
        assert pinned.wait(10)
        before = thread_cpus(skip_self=False)
        counts = thread_cpus()
    finally:
        release.set()
        t.join()
    assert counts.get(str(core), 0) >= 1, counts
    assert sum(before.values()) == sum(counts.values()) + 1, (before, counts)
    if len(allowed) > 1:  # (the calling thread keeps the whole set)
        assert before.get(cpu_ranges(allowed), 0) >= 1, before


def test_thread_sched_stat_counts_this_threads_cpu_time():
    import threading
    from paam_experiments.common import cpus
    st = cpus.ThreadSchedStat()
    cpu0, waited0 = st.read()
    if cpu0 < 0:
        pytest.skip("no /proc/thread-self/schedstat here")
    end = time.thread_time_ns() + 20_000_000  # 20 ms on the CPU, however loaded the machine
    while time.thread_time_ns() < end:
        pass
    cpu1, waited = st.read()
    assert cpu1 - cpu0 >= 20_000_000 and waited >= waited0 >= 0
    other = []
    t = threading.Thread(target=lambda: other.append(st.read()))
    t.start()
    t.join()
    assert other[0][0] < cpu1  # its own thread's counters, not this one's


PROC_STAT = """cpu  60 0 30 900 0 0 0 15 0 0
cpu0 10 0 10 400 0 0 0 5 0 0
cpu1 50 {nice} 20 500 7 3 2 {steal} 0 0
intr 12345
"""


def test_proc_stat_is_parsed_per_cpu_into_busy_and_steal():
    from paam_experiments.common import host
    got = host.parse_proc_stat(PROC_STAT.format(nice=1, steal=10))
    # busy: user + nice + system + irq + softirq (idle and iowait are not busy)
    assert got == {0: (20, 5), 1: (76, 10)}


def test_host_stat_samples_proc_stat_and_gives_per_interval_deltas(tmp_path):
    import os
    import threading
    import time

    import numpy as np
    from paam_experiments.common.host import HostStat
    f = tmp_path / "stat"
    f.write_text(PROC_STAT.format(nice=0, steal=10))
    host = HostStat(interval=0.02, path=str(f))
    stop = threading.Event()
    steps = [0]

    def tick():  # cpu1 gains 3 ticks busy and 2 ticks stolen a step
        while not stop.wait(0.05):
            steps[0] += 1
            n = steps[0]
            (tmp_path / "next").write_text(PROC_STAT.format(nice=3 * n, steal=10 + 2 * n))
            os.replace(tmp_path / "next", f)  # whole, as the kernel's file reads
    with host:
        th = threading.Thread(target=tick)
        th.start()
        # until the file moved 4 steps and the sampler took 5 samples (a busy host may delay
        # either thread)
        deadline = time.monotonic() + 60
        while (steps[0] < 4 or len(host.series()[0]) < 5) and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        th.join()
    t, cpus, busy, steal = host.series()
    assert cpus == [0, 1] and len(t) >= 5 and (np.diff(t) > 0).all()
    ms = 1000.0 / os.sysconf("SC_CLK_TCK")
    assert busy[:, 0].sum() == 0 and steal[:, 0].sum() == 0
    # from the sample on entry (before the first step) to the one on exit (after the last),
    # every step counted once: 2 stolen and 3 busy ticks each
    n = round(steal[:, 1].sum() / (2 * ms))
    assert n == steps[0] >= 4 and busy[:, 1].sum() == pytest.approx(3 * n * ms)
    assert host.result().t_ns.tolist() == t.tolist() and host.result().error == ""
    # no /proc/stat: an empty series and the reason, not an exception
    missing = HostStat(path=str(tmp_path / "none"))
    with missing:
        pass
    assert missing.error and len(missing.series()[0]) == 0


def test_steal_around_an_instance_and_the_split_by_steal():
    import numpy as np
    from paam_experiments.common import host
    s = 1_000_000_000
    t = np.array([1, 2, 3, 4, 5, 6, 7, 8]) * s           # interval ends
    steal = np.array([[0, 0], [0, 0], [0, 0], [300, 100], [0, 0], [0, 0], [0, 0], [0, 0]])
    ends = np.array([int(1.5 * s), int(3.5 * s), int(6.9 * s), int(7.5 * s)])
    spans = np.array([100.0, 100.0, 2500.0, 100.0])      # the third spans 4.4..6.9 s
    got = host.steal_around(ends, spans, t, steal)
    # one interval of slack each side: 3.5 s sees the interval ending at 4 s (400 ms)
    assert got.tolist() == [0.0, 400.0, 400.0, 0.0]
    split = host.split_by_steal([70.0, 90.0, 95.0, 72.0], got)
    assert split["quiet"]["n"] == 2 and split["quiet"]["max"] == 72.0
    assert split["noisy"]["n"] == 2 and split["noisy"]["max"] == 95.0
    assert split["correlation"] > 0.9
    assert np.isnan(host.steal_around(ends, spans, np.zeros(0, np.int64),
                                        np.zeros((0, 2)))).all()


def test_host_summary_and_rows_count_each_executor_core_once():
    import numpy as np
    from paam_experiments.common import host
    s = 1_000_000_000
    r = {"host_t_ns": np.array([2, 3]) * s, "host_cpus": [0, 1, 2],
         "host_busy_ms": np.array([[500.0, 100, 0], [900, 0, 0]]),
         "host_steal_ms": np.array([[10.0, 20, 30], [0, 0, 70]]), "host_error": ""}
    # two executors mapped onto core 0 (a small machine), one on a core not sampled
    h = host.host_summary(r, [0, 0, 7])
    assert h["samples"] == 2 and h["steal_ms_per_s"]["max"] == 70
    assert h["steal_ms_per_s_executor_cpus"]["max"] == 10 and h["busy_ms_per_s"]["mean"] == 750
    # per CPU: mean busy 700 / 50 / 0 ms/s; a vCPU counts as used from 50 ms/s busy on
    assert h["per_cpu"][1] == {"busy_ms_per_s": 50.0, "steal_ms_per_s": 10.0}
    assert h["per_cpu"][2] == {"busy_ms_per_s": 0.0, "steal_ms_per_s": 50.0}
    assert h["active_cpus"] == [0, 1]
    assert host.steal_text(h) == "65 / 70 (5 / 10), 2 vCPUs used, 0.75 CPUs busy"
    rows = host.host_rows(r, [0, 0], s)
    assert rows[0] == {"t_s": 1.0, "busy_ms": 600.0, "steal_ms": 60.0,
                       "steal_ms_executor_cpus": 10.0, "steal_ms_cpu0": 10.0,
                       "steal_ms_cpu1": 20.0, "steal_ms_cpu2": 30.0, "busy_ms_cpu0": 500.0,
                       "busy_ms_cpu1": 100.0, "busy_ms_cpu2": 0.0}
    # no samples (no /proc/stat): the reason, no rows
    none = {"host_t_ns": np.zeros(0, np.int64), "host_error": "/proc/stat: missing"}
    assert host.host_summary(none, [0]) == {"error": "/proc/stat: missing"}
    assert host.host_rows(none, [0], 0) == []


def test_join_child_reports_a_failed_or_hung_worker_and_leaves_nothing_running(tmp_path):
    from paam_experiments.common import procs

    class Proc:  # the part of multiprocessing.Process that join_child uses
        def __init__(self, hangs):
            self.alive, self.joined, self.killed = hangs, None, False

        def join(self, timeout):
            self.joined = timeout

        def is_alive(self):
            return self.alive and not self.killed

        def kill(self):
            self.killed = True

    path = str(tmp_path / "worker.npz")
    procs.join_child(Proc(False), path, "E0", 5.0)  # finished, no note: fine
    hung = Proc(True)
    with pytest.raises(SystemExit, match="E0 did not finish"):
        procs.join_child(hung, path, "E0", -3.0)
    assert hung.killed and hung.joined == 1.0  # a deadline already past still waits 1 s
    try:
        raise ValueError("no GPU")
    except ValueError as exc:
        procs.child_failed(path, exc)
    with pytest.raises(SystemExit, match=r"E0 failed: ValueError: no GPU\n(.|\n)*Traceback"):
        procs.join_child(Proc(False), path, "E0", 5.0)


def test_keep_awake_runs_an_idle_class_loop_per_core_while_the_block_runs():
    import os
    import time

    from paam_experiments.common import procs

    def settled(pid: int) -> bool:
        """The loop pinned to one of ``cpus`` and in the idle class (SCHED_IDLE, or nice 19
        where the idle class is refused)."""
        return (os.sched_getaffinity(pid) in ({c} for c in cpus)
                and (os.sched_getscheduler(pid) == getattr(os, "SCHED_IDLE", 5)
                     or os.getpriority(os.PRIO_PROCESS, pid) == 19))

    cpus = sorted(os.sched_getaffinity(0))[:2]
    with procs.keep_awake(cpus) as pids:
        assert len(pids) == len(cpus)
        deadline = time.monotonic() + 60  # (a spawned interpreter starts slowly on a busy host)
        while not all(settled(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(settled(pid) for pid in pids)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_gc_pauses_records_collections_and_applies_the_mode():
    import gc

    import numpy as np

    from paam_experiments.common import collector, report
    was = gc.isenabled()
    with collector.GcPauses("off") as p:
        assert not gc.isenabled()
        gc.collect(2)  # an explicit collection still runs, and is recorded
    assert gc.isenabled() == was
    a = p.array()
    assert a.shape == (1, 3) and a[0, 0] == 2 and a[0, 2] > 0
    with collector.GcPauses("freeze"):
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    s = collector.gc_summary(a)
    assert s["gen2"]["n"] == 1 and s["gen0"]["n"] == 0 and s["gen2"]["max_ms"] > 0
    with pytest.raises(ValueError):
        collector.GcPauses("sometimes")
    # ns of pauses inside each interval: partly, wholly, not at all
    pauses = np.array([[0, 100, 50], [2, 400, 100]])
    got = collector.overlaps([120, 0, 200], [300, 1000, 300], pauses)
    assert got.tolist() == [30, 150, 0]
    # instances as steal_around takes them (end ns, length ms): one holds a 0.5 ms collection
    c, hit = collector.gc_instances([2_000_000, 3_000_000], [1.5, 0.5],
                                 np.array([[2, 1_000_000, 500_000]]))
    assert hit.tolist() == [True, False]
    assert c["instances"] == 2 and c["during_a_collection"] == 1
    assert c["collection_ms_inside"]["max"] == 0.5
    assert collector.gc_line([s, s]) == "0/0/2, longest " + report.fmt(s["gen2"]["max_ms"], 2)


def test_gpu_label_puts_the_hosts_gpus_on_one_line():
    from paam_experiments.common.machine import gpu_label
    assert gpu_label([]) == "unknown"
    assert gpu_label(["NVIDIA H100 80GB HBM3"]) == "NVIDIA H100 80GB HBM3"
    assert gpu_label(["NVIDIA H200"] * 2) == "2 x NVIDIA H200"
    assert gpu_label(["A", "B"]) == "A, B"


def test_machine_line_says_whether_the_kernel_throttles_sched_fifo(tmp_path):
    from paam_experiments.common import machine

    (tmp_path / "sched_rt_period_us").write_text("1000000\n")
    (tmp_path / "sched_rt_runtime_us").write_text("950000\n")
    assert machine.rt_throttling(tmp_path) == (950000, 1000000)
    meta = {"cpu": "x", "nproc": 2, "kernel": "6.18", "backend": "cpu", "date": "d",
            "sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000}
    assert "RT throttling 950000 of 1000000 us" in machine.machine_line(meta)
    (tmp_path / "sched_rt_runtime_us").write_text("-1\n")
    assert machine.rt_throttling(tmp_path) == (-1, 1000000)
    assert "RT throttling off" in machine.machine_line(dict(meta, sched_rt_runtime_us=-1))
    assert machine.rt_throttling(tmp_path / "missing") is None
    del meta["sched_rt_runtime_us"]
    assert "throttling" not in machine.machine_line(meta)


def test_device_core_line_says_when_the_sched_fifo_buckets_exceed_the_rt_budget():
    from paam.analysis.bounds import bucket_demand
    from paam.analysis.model import load_system
    from paam_experiments.case_study1.config import DEFAULT_SYSTEM
    from paam_experiments.common.machine import device_core_line

    spec = load_system(DEFAULT_SYSTEM)
    # rule R2 puts be1 (rank 6 of 8) in bucket 4 of 6: the SCHED_FIFO buckets 0-4 then declare
    # chains 1-6 (85%) and be1 (1/6 of the unit)
    demand = bucket_demand(spec)["gpu0"]
    assert len(demand) == 6 and demand[4] == pytest.approx(20 / 120)
    assert sum(demand[:-1]) == pytest.approx(1.0139, abs=1e-4)
    throttled = {"sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000}
    line = device_core_line({"gpu0": demand}, throttled)
    assert "101.4%" in line and "over the kernel's RT budget (950000 of 1000000 us)" in line
    lifted = dict(throttled, sched_rt_runtime_us=-1)
    assert "over the kernel" not in device_core_line({"gpu0": demand}, lifted)
    assert "over the kernel" not in device_core_line({"gpu0": demand}, {})
    # be1's bucket and be2's hold only best-effort chains: kept off SCHED_FIFO (paamd
    # --fair-buckets 2), the SCHED_FIFO buckets declare chains 1-6 alone, inside the budget
    line = device_core_line({"gpu0": demand}, throttled, {"gpu0": 2})
    assert "the SCHED_FIFO ones (0-3) 84.7%" in line and "over the kernel" not in line
    assert "(none) 0.0%" in device_core_line({"gpu0": demand}, throttled, {"gpu0": 6})
    assert "(all) 119.6%" in device_core_line({"gpu0": demand}, throttled, {"gpu0": 0})


def test_methods_parse_to_names_in_the_given_order_and_a_bad_key_exits():
    from paam_experiments.common import methods

    assert methods.parse_methods("paam, ros2") == ["PAAM", "ROS 2"]
    assert methods.parse_methods("ros2,picas,paam") == list(methods.METHODS)
    for bad in ("", ",", "ros", "paam,PiCAS"):
        with pytest.raises(SystemExit, match="choose from ros2, picas, paam"):
            methods.parse_methods(bad)


def test_lock_memory_locks_where_permitted_and_says_why_not_elsewhere():
    # in a child process: mlockall(MCL_FUTURE) would stay with the test process
    code = ("import os, resource; from paam.ros import rt\n"
            "if os.environ.get('FAKE_LIMIT'):\n"
            "    rt._may_lock_without_limit = lambda: False\n"
            "    resource.getrlimit = lambda _r: (65536, 65536)\n"
            "line = rt.lock_memory(); print(line)\n"
            "print([l for l in open('/proc/self/status') if l.startswith('VmLck')][0])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    line, vmlck = r.stdout.splitlines()[:2]
    locked_kb = int(vmlck.split()[1])
    if line.startswith("memory locked"):
        assert locked_kb > 0, vmlck
    else:  # a machine that refuses it: said, and nothing locked
        assert ("mlockall denied" in line or "not locked" in line) and locked_kb == 0, line
    assert "malloc keeps freed memory" in line
    # a user under a finite memlock limit: not attempted (a locked process could not grow past
    # it), and the line says how to allow it
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, FAKE_LIMIT="1"))
    line, vmlck = r.stdout.splitlines()[:2]
    assert line.startswith("memory not locked: RLIMIT_MEMLOCK is 64 kB") and "ulimit -l" in line
    assert int(vmlck.split()[1]) == 0

