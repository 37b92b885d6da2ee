"""paam top, paam trace and paam metrics.

The renderers, the trace-event conversion and the Prometheus collector are checked on fake
snapshots and records with known counts (paam.observe's schema); the commands run with a fake
paam.observe module. The end-to-end tests at the bottom run the real tools against a real
paamd after requests the test sends itself.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import types
import urllib.request
from collections import defaultdict

import pytest

import paam
from paam import cli
from paam.observe_tools import fmt
from paam.observe_tools.source import ToolError

# -- fakes -----------------------------------------------------------------------------------------


def S(n, p50=0.0, p99=0.0, mx=0.0):
    return {"n": n, "p50": p50, "p99": p99, "max": mx}


def _lane(bucket, lane, depth, served, busy, unit=0):
    stage = S(served, 1.0, 2.0, 3.0) if served else S(0)
    return {"unit": unit, "bucket": bucket, "lane": lane, "queue_depth": depth,
            "in_flight": 1 if depth else 0, "served": served, "failed": bucket,
            "busy_share": busy,
            "stages_us": {"dispatch": stage, "queue": stage, "launch": stage,
                          "device": S(served, 900.0, 1100.0, 1500.0) if served else S(0),
                          "complete": stage,
                          "total": S(served, 950.0, 2500.0, 4100.0) if served else S(0)}}


def _client(cid, name, priority, bucket, requests, *, bound=None, worst=None, violations=0,
            pid=None):
    return {"id": cid, "name": name, "pid": pid or 100 + cid, "uid": 1000, "priority": priority,
            "bucket": bucket, "unit": 0, "timed": bound is not None, "requests": requests,
            "failed": 0, "latency_us": S(requests, 800.0 + cid, 2000.0 + cid, 2600.0 + cid)
            if requests else S(0), "bound_ms": bound, "worst_observed_ms": worst,
            "violations": violations}


def snapshot():
    """Three buckets of one lane each, three clients (one with 4 violations), ε observed above
    the value the analysis used."""
    return {
        "server": {"pid": 4242, "uid": 1000, "backend": "cpu", "buckets": 3, "units": 1,
                   "socket": "/tmp/fake.sock", "uptime_s": 125.0, "window_s": 10.0,
                   "admission": "analysis", "now_ns": 10**12},
        "totals": {"requests_completed": 600, "requests_failed": 3, "requests_cancelled": 1,
                   "protocol_errors": 0, "registrations": 3, "clients_reaped": 0,
                   "active_clients": 3, "connections_dropped": 0},
        "lanes": [_lane(2, 0, 12, 100, 0.9), _lane(0, 0, 0, 300, 0.31), _lane(1, 0, 3, 200, 0.55)],
        "clients": [_client(2, "planner", 5, 1, 200, bound=4.0, worst=3.5),
                    _client(1, "perception", 9, 0, 300, bound=2.0, worst=2.6, violations=4),
                    _client(3, "logger", 1, 2, 100)],
        "overheads": {"epsilon_ms": {"used": 0.05, "observed_p99": 0.08},
                      "kappa_ms": {"used": 0.2, "observed_p99": None}},
        "violations_total": 4,
    }


def record(client, seq, *, t, lane=0, bucket=0, name=None, priority=1, kernel="spin",
           queue=10_000, device=100_000, pid=None, status="ok"):
    """A trace record whose stamps start at t ns: 1 µs dispatch, `queue` ns queued, 2 µs launch,
    `device` ns on the device, 3 µs completing."""
    sub = t
    deq = sub + 1_000
    picked = deq + queue
    ds = picked + 2_000
    de = ds + device
    done = de + 3_000
    return {"client": client, "client_name": name or f"c{client}", "pid": pid or 500 + client,
            "priority": priority, "kernel": kernel, "unit": 0, "bucket": bucket, "lane": lane,
            "sequence": seq, "status": status, "submitted": sub, "dequeued": deq,
            "picked": picked, "device_start": ds, "device_end": de, "completed": done}


def fake_records():
    """Two clients on two buckets, requests back to back on each lane: 3 + 2 records."""
    t0 = 1_000_000_000
    recs = [record(1, i + 1, t=t0 + i * 200_000, bucket=0, name="high", priority=9)
            for i in range(3)]
    recs += [record(2, i + 1, t=t0 + 50_000 + i * 300_000, bucket=1, name="low", priority=1,
                    kernel="matmul") for i in range(2)]
    return recs


class FakeObserve(types.ModuleType):
    """paam.observe as the contract describes it, answering from fakes."""

    def __init__(self, snap=None, records=(), dropped=0, error=None):
        super().__init__("paam.observe")
        self.snap, self.records, self.dropped, self.error = snap, list(records), dropped, error
        self.calls = []
        self.traces = []
        outer = self

        class Trace:
            def __init__(self, socket=None, capacity=1 << 20):
                self.socket, self.started, self.stopped = socket, False, False
                self.dropped = outer.dropped
                self._left = list(outer.records)
                outer.traces.append(self)

            def start(self):
                self.started = True

            def read(self):
                out, self._left = self._left[:2], self._left[2:]  # a few at a time
                return out

            def stop(self):
                self.stopped = True

        self.Trace = Trace

    def stats(self, socket=None, timeout=2.0):
        self.calls.append(socket)
        if self.error is not None:
            raise self.error
        return self.snap


@pytest.fixture
def fake_observe(monkeypatch):
    def install(**kw):
        mod = FakeObserve(**kw)
        monkeypatch.setitem(sys.modules, "paam.observe", mod)
        monkeypatch.setattr(paam, "observe", mod, raising=False)
        return mod
    return install


# -- formatting and the top screen -----------------------------------------------------------------


def test_durations_keep_a_readable_unit():
    assert fmt.us(None) == "-"
    assert fmt.us(0.85) == "850 ns"
    assert fmt.us(12.34) == "12.3 µs"
    assert fmt.us(4560) == "4.56 ms"
    assert fmt.us(1_200_000) == "1.20 s"
    assert fmt.ms(2.6) == "2.6 ms"
    assert fmt.uptime(187) == "3m07s" and fmt.uptime(7500) == "2h05m"


def _text(renderable, width=160):
    from rich.console import Console
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_top_screen_shows_lanes_by_bucket_and_clients_by_priority():
    from paam.observe_tools.top_view import render
    text = _text(render(snapshot(), note="q or Ctrl-C: quit"))
    assert "pid 4242" in text and "cpu" in text and "3 bucket(s)" in text and "up 2m05s" in text
    assert "600 completed" in text and "bound violations 4" in text
    # clients: the most critical first
    assert text.index("perception") < text.index("planner") < text.index("logger")
    # lanes in bucket order, each with its queue depth, served count and busy share
    rows = [line.split() for line in text.splitlines()
            if re.match(r"^\s+0\s+\d\s+0\s+[█·]", line)]
    assert [int(r[1]) for r in rows] == [0, 1, 2]
    # unit bucket lane bar depth run served failed p50 p99 max busy (durations are 2 fields)
    assert [(r[4], r[6], r[-1]) for r in rows] == [("0", "300", "31%"), ("3", "200", "55%"),
                                                   ("12", "100", "90%")]
    assert rows[2][3] == "█" * 12 and "█" not in rows[0][3]
    perception = next(l for l in text.splitlines() if "perception" in l)
    assert "2.6 ms" in perception and "2 ms" in perception and perception.split()[-1] == "4"
    # ε observed above the value the analysis used is called out
    assert "above the analysis' value" in text
    assert "q or Ctrl-C: quit" in text


def test_queue_bar_fills_with_depth():
    from paam.observe_tools.top_view import queue_bar
    assert queue_bar(0, 8).plain.count("█") == 0
    assert queue_bar(1, 100).plain.count("█") == 1       # any waiting request shows
    assert queue_bar(4, 8, cells=12).plain.count("█") == 6
    assert queue_bar(20, 8, cells=12).plain.count("█") == 12
    assert queue_bar(5, 8).plain.endswith(" 5")


def test_top_screen_without_clients_or_samples():
    from paam.observe_tools.top_view import render
    snap = snapshot()
    snap["clients"] = []
    snap["lanes"] = [_lane(0, 0, 0, 0, 0.0)]
    text = _text(render(snap))
    assert "no clients registered" in text
    assert "-" in text  # no latency in the window


class ScriptedKeys:
    def __init__(self, keys):
        self.keys = list(keys)

    def wait(self, timeout):
        """The next scripted key; None: no key within the timeout (which passes)."""
        key = self.keys.pop(0) if self.keys else None
        if key is None:
            time.sleep(max(0.0, timeout))
        return key


def test_live_view_refreshes_until_q_and_survives_a_failed_refresh():
    from rich.console import Console

    from paam.observe_tools.live import run_live
    calls = []

    def fetch():
        calls.append(1)
        if len(calls) == 3:
            raise ToolError("no paamd at /x: start one with `paam serve`")
        return snapshot()

    import io
    out = io.StringIO()
    console = Console(file=out, width=160, force_terminal=False)
    # two intervals pass without a key (two refreshes, the second fails), then q
    rc = run_live(fetch, interval=0.01, console=console, keys=ScriptedKeys([None, None, "q"]),
                  screen=False)
    assert rc == 0
    assert len(calls) == 3
    text = out.getvalue()
    assert "retrying every 0.01 s" in text  # the failed refresh said why ...
    assert "perception" in text             # ... beneath the last snapshot


def test_terminal_keys_restore_the_terminal():
    import pty
    import termios

    from paam.observe_tools.live import TerminalKeys
    master, slave = pty.openpty()
    try:
        before = termios.tcgetattr(slave)
        stream = os.fdopen(slave, "rb", buffering=0, closefd=False)
        with TerminalKeys(stream) as keys:
            during = termios.tcgetattr(slave)
            assert not during[3] & termios.ICANON and not during[3] & termios.ECHO
            os.write(master, b"q")
            assert keys.wait(5.0) == "q"
            assert keys.wait(0.01) is None
        assert termios.tcgetattr(slave) == before
    finally:
        os.close(master)
        os.close(slave)


def _run_cli(argv, capsys):
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_top_once_json_prints_the_snapshot(fake_observe, capsys):
    fake = fake_observe(snap=snapshot())
    rc, out, err = _run_cli(["top", "--once", "--json", "--socket", "/tmp/s.sock"], capsys)
    assert rc == 0, err
    assert json.loads(out) == snapshot()
    assert fake.calls == ["/tmp/s.sock"]


def test_top_once_prints_one_frame(fake_observe, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    fake_observe(snap=snapshot())
    rc, out, _ = _run_cli(["top", "--once", "--socket", "/tmp/s.sock"], capsys)
    assert rc == 0
    assert "perception" in out and "lanes" in out and "q or Ctrl-C" not in out


def test_top_without_a_server_says_how_to_start_one(fake_observe, capsys):
    fake_observe(error=paam.ServerNotRunning("connect: No such file or directory"))
    rc, out, err = _run_cli(["top", "--once", "--json", "--socket", "/nowhere.sock"], capsys)
    assert rc == 2 and out == ""
    assert "no paamd at /nowhere.sock: start one with `paam serve`" in err
    rc, _, err = _run_cli(["top", "--socket", "/nowhere.sock"], capsys)  # live: same, at once
    assert rc == 2 and "no paamd at /nowhere.sock" in err


@pytest.mark.parametrize("argv,why", [(["top", "--json"], "--json needs --once"),
                                      (["top", "--interval", "0"], "--interval must be positive")])
def test_top_refuses_bad_options(argv, why, fake_observe, capsys):
    fake_observe(snap=snapshot())
    rc, _, err = _run_cli(argv, capsys)
    assert rc == 2 and why in err


# -- trace-event format ----------------------------------------------------------------------------

_REQUIRED = {"X": {"name": str, "ph": str, "pid": int, "tid": int, "ts": (int, float),
                   "dur": (int, float)},
             "M": {"name": str, "ph": str, "pid": int, "args": dict},
             "s": {"name": str, "ph": str, "pid": int, "tid": int, "ts": (int, float),
                   "id": (int, str), "cat": str},
             "f": {"name": str, "ph": str, "pid": int, "tid": int, "ts": (int, float),
                   "id": (int, str), "cat": str}}
_METADATA = {"process_name": "name", "thread_name": "name", "process_sort_index": "sort_index",
             "thread_sort_index": "sort_index"}


def trace_problems(doc):
    """What in doc breaks the Chrome trace-event format (JSON object form) as ui.perfetto.dev and
    chrome://tracing read it: required keys and types per phase, known metadata with its
    argument, non-negative durations, timestamps in order on each track, slices on one track
    nested or disjoint, every flow start finished (same id and category) on a track that has a
    slice enclosing the finish when it binds to one (bp "e"), and the start inside a slice."""
    problems = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["no traceEvents list"]
    last_ts = {}
    slices = defaultdict(list)
    flows = defaultdict(dict)
    for i, e in enumerate(doc["traceEvents"]):
        ph = e.get("ph")
        if ph not in _REQUIRED:
            problems.append(f"{i}: phase {ph!r} not produced by paam trace")
            continue
        for key, typ in _REQUIRED[ph].items():
            if key not in e:
                problems.append(f"{i}: {ph} event without {key}")
            elif not isinstance(e[key], typ) or isinstance(e[key], bool):
                problems.append(f"{i}: {ph}.{key} is {type(e[key]).__name__}")
        if ph == "M":
            arg = _METADATA.get(e.get("name"))
            if arg is None or arg not in e.get("args", {}):
                problems.append(f"{i}: metadata {e.get('name')!r} without args.{arg}")
            continue
        track = (e["pid"], e["tid"])
        ts = round(e["ts"] * 1000)  # to the ns, as the readers keep them
        if ts < last_ts.get(track, -1):
            problems.append(f"{i}: ts {e['ts']} before the previous event on track {track}")
        last_ts[track] = ts
        if ph == "X":
            if e["dur"] < 0:
                problems.append(f"{i}: negative dur")
            slices[track].append((ts, ts + round(e["dur"] * 1000)))
        else:
            flows[(e["cat"], e["id"])][ph] = (track, ts, e.get("bp"))
    for track, spans in slices.items():
        stack = []
        for start, end in spans:
            while stack and stack[-1] <= start:
                stack.pop()
            if stack and end > stack[-1]:
                problems.append(f"track {track}: slice [{start}, {end}] overlaps its parent "
                                f"ending at {stack[-1]} without nesting")
            stack.append(end)

    def enclosed(track, ts):
        return any(a <= ts <= b for a, b in slices.get(track, []))

    for key, ends in flows.items():
        if "s" not in ends or "f" not in ends:
            problems.append(f"flow {key}: has {sorted(ends)} only")
            continue
        (strack, sts, _), (ftrack, fts, bp) = ends["s"], ends["f"]
        if fts < sts:
            problems.append(f"flow {key}: finishes before it starts")
        if not enclosed(strack, sts):
            problems.append(f"flow {key}: start outside every slice of its track")
        if bp == "e" and not enclosed(ftrack, fts):
            problems.append(f"flow {key}: finish binds to no enclosing slice")
    return problems


def test_the_validator_catches_broken_traces():
    good = {"traceEvents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 3},
        {"ph": "s", "name": "r", "cat": "flow", "id": 1, "pid": 1, "tid": 1, "ts": 2},
        {"ph": "X", "name": "c", "pid": 1, "tid": 2, "ts": 5, "dur": 3},
        {"ph": "f", "bp": "e", "name": "r", "cat": "flow", "id": 1, "pid": 1, "tid": 2, "ts": 5}]}
    assert trace_problems(good) == []
    bad = json.loads(json.dumps(good))
    bad["traceEvents"][1]["dur"] = 20            # overlaps its parent
    bad["traceEvents"].pop()                     # a flow without its finish
    bad["traceEvents"].append({"ph": "X", "name": "d", "pid": 1, "tid": 2, "ts": 1, "dur": 1})
    found = "\n".join(trace_problems(bad))
    assert "overlaps its parent" in found and "has ['s'] only" in found
    assert "before the previous" in found


def test_records_become_lanes_clients_kernels_and_flows():
    from paam.observe_tools.trace_events import to_trace_events
    recs = fake_records()
    doc = to_trace_events(recs, server_pid=4242, dropped=7)
    assert trace_problems(doc) == []
    events = doc["traceEvents"]
    by_cat = defaultdict(list)
    for e in events:
        by_cat[(e["ph"], e.get("cat"))].append(e)
    assert len(by_cat[("X", "lane")]) == 5
    assert len(by_cat[("X", "device")]) == 5
    assert len(by_cat[("X", "client")]) == 5
    assert len(by_cat[("s", "flow")]) == len(by_cat[("f", "flow")]) == 5
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs[4242].startswith("paamd")
    assert set(procs) == {4242, 501, 502}
    lane_tracks = sorted(n for (pid, _), n in names.items() if pid == 4242)
    assert lane_tracks == ["unit 0 · bucket 0 · lane 0", "unit 0 · bucket 1 · lane 0"]
    assert names[(501, by_cat[("X", "client")][0]["tid"])].startswith("high (id 1, priority 9)")
    # each lane slice spans picked..completed and holds its kernel slice
    t0 = min(r["submitted"] for r in recs)
    r = recs[0]
    lane0 = [e for e in by_cat[("X", "lane")] if e["args"]["client_id"] == 1]
    assert [e["args"]["sequence"] for e in lane0] == [1, 2, 3]  # in order on the lane
    assert lane0[0]["ts"] == (r["picked"] - t0) / 1000
    assert lane0[0]["dur"] == (r["completed"] - r["picked"]) / 1000
    kernel0 = next(e for e in by_cat[("X", "device")] if e["tid"] == lane0[0]["tid"])
    assert kernel0["ts"] == (r["device_start"] - t0) / 1000 and kernel0["dur"] == 100.0
    assert lane0[0]["args"]["queue_us"] == 10.0 and lane0[0]["args"]["device_us"] == 100.0
    # a flow from the client's submit to the lane slice that ran it
    s = next(e for e in by_cat[("s", "flow")] if e["id"] == by_cat[("f", "flow")][0]["id"])
    f = by_cat[("f", "flow")][0]
    assert f["bp"] == "e"
    assert doc["otherData"]["records"] == 5 and doc["otherData"]["dropped"] == 7
    assert doc["otherData"]["origin_ns"] == t0
    assert s["ts"] <= f["ts"]


def test_lane_slices_follow_the_pick_order_not_the_submit_order():
    from paam.observe_tools.trace_events import to_trace_events
    # the low-priority request was submitted first but picked after the urgent one
    low = record(2, 1, t=1_000_000, name="low", priority=1, queue=200_000)
    high = record(1, 1, t=1_050_000, name="high", priority=9, queue=1_000)
    doc = to_trace_events([low, high])
    assert trace_problems(doc) == []
    lane = [e for e in doc["traceEvents"] if e.get("cat") == "lane"]
    assert [e["args"]["client"] for e in lane] == ["high", "low"]
    assert len({e["tid"] for e in lane}) == 1  # one track: they do not overlap


def test_overlapping_requests_of_one_client_spill_into_a_second_row():
    from paam.observe_tools.trace_events import to_trace_events
    # one client, two kernels outstanding at once, on two lanes
    a = record(1, 1, t=1_000_000, kernel="spin", lane=0)
    b = record(1, 1, t=1_020_000, kernel="matmul", lane=1)
    doc = to_trace_events([a, b])
    assert trace_problems(doc) == []
    names = [e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"]
    assert "c1 (id 1, priority 1)" in names and "c1 (id 1, priority 1) #2" in names


def test_a_request_that_never_reached_a_lane_has_only_its_client_slice():
    from paam.observe_tools.trace_events import to_trace_events
    r = record(1, 1, t=1_000_000, status="cancelled")
    r.update(picked=0, device_start=0, device_end=0)
    doc = to_trace_events([r, record(2, 1, t=2_000_000)])
    assert trace_problems(doc) == []
    cats = [e.get("cat") for e in doc["traceEvents"] if e["ph"] == "X"]
    assert cats.count("client") == 2 and cats.count("lane") == 1 and cats.count("device") == 1


def test_recording_drains_until_the_duration_and_stops(fake_observe):
    from paam.observe_tools.recorder import record as record_for
    fake = fake_observe(snap=snapshot(), records=fake_records(), dropped=3)
    now = [0.0]
    seen, started = [], []
    recs, dropped = record_for("/s", 1.0, progress=lambda t, n: seen.append((t, n)),
                               on_start=lambda: started.append(fake.traces[0].started),
                               clock=lambda: now[0],
                               sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert len(recs) == 5 and dropped == 3
    assert started == [True]  # told once paamd records
    trace = fake.traces[0]
    assert trace.started and trace.stopped and trace.socket == "/s"
    assert seen[-1] == (1.0, 5) and [n for _, n in seen] == sorted(n for _, n in seen)


def test_ctrl_c_ends_a_recording_with_what_it_has(fake_observe):
    from paam.observe_tools.recorder import record as record_for
    fake = fake_observe(records=fake_records())
    slept = []

    def sleep(s):
        slept.append(s)
        if len(slept) == 2:
            raise KeyboardInterrupt

    recs, _ = record_for("/s", 100.0, sleep=sleep)
    assert len(recs) == 4  # one read of 2 before the interrupt, and the last read's 2
    assert fake.traces[0].stopped


def test_trace_command_writes_a_valid_file_and_a_plot(fake_observe, tmp_path, capsys):
    fake_observe(snap=snapshot(), records=fake_records(), dropped=2)
    out, png = tmp_path / "t.json", tmp_path / "t.png"
    rc, stdout, err = _run_cli(["trace", "--duration", "0.3", "-o", str(out), "--socket", "/s",
                                "--plot", str(png)], capsys)
    assert rc == 0, err
    assert "5 requests recorded, 2 dropped" in stdout
    assert "overflowed: 2 requests are missing" in err
    doc = json.loads(out.read_text())
    assert trace_problems(doc) == []
    assert sum(e.get("cat") == "device" for e in doc["traceEvents"]) == 5
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trace_command_errors(fake_observe, tmp_path, capsys):
    fake_observe(error=paam.ServerNotRunning("nothing there"))
    rc, _, err = _run_cli(["trace", "--duration", "1", "-o", str(tmp_path / "t.json"),
                           "--socket", "/nowhere"], capsys)
    assert rc == 2 and "no paamd at /nowhere: start one with `paam serve`" in err
    assert not (tmp_path / "t.json").exists()
    rc, _, err = _run_cli(["trace", "--duration", "0", "-o", str(tmp_path / "t.json")], capsys)
    assert rc == 2 and "--duration must be positive" in err
    rc, _, err = _run_cli(["trace", "--duration", "1", "-o", "/no/such/dir/t.json"], capsys)
    assert rc == 2 and "-o: no folder /no/such/dir" in err


def test_timeline_plot_draws_every_request(tmp_path):
    from paam.observe_tools.timeline_plot import plot_timeline
    path = tmp_path / "p.png"
    assert plot_timeline(fake_records(), str(path)) == 5
    assert path.stat().st_size > 1000
    assert plot_timeline([], str(tmp_path / "empty.png")) == 0


# -- Prometheus ------------------------------------------------------------------------------------


def _scrape(collector):
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families
    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    text = generate_latest(reg).decode()
    samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return text, samples


def test_metrics_carry_the_snapshot():
    from paam.observe_tools.prom import PaamCollector
    text, m = _scrape(PaamCollector(snapshot))
    assert m[("paam_up", ())] == 1
    def key(name, **labels):
        return name, tuple(sorted((k, str(v)) for k, v in labels.items()))

    def lane(b, **more):
        return {"unit": 0, "bucket": b, "lane": 0, **more}

    assert m[key("paam_requests_total", **lane(0))] == 300
    assert m[key("paam_requests_total", **lane(2))] == 100
    assert m[key("paam_requests_failed_total", **lane(2))] == 2
    assert m[key("paam_queue_depth", **lane(2))] == 12
    assert m[key("paam_in_flight", **lane(1))] == 1
    assert m[key("paam_busy_share", **lane(1))] == 0.55
    assert m[key("paam_stage_latency_us", **lane(0, stage="total", quantile="0.99"))] == 2500.0
    assert m[key("paam_stage_latency_us", **lane(0, stage="device", quantile="1"))] == 1500.0
    client = {"client": "perception", "id": 1, "priority": 9}
    assert m[key("paam_client_requests_total", **client)] == 300
    assert m[key("paam_bound_violations_total", **client)] == 4
    assert m[key("paam_bound_violations_total", client="planner", id=2, priority=5)] == 0
    assert m[key("paam_client_bound_ms", **client)] == 2.0
    assert m[key("paam_client_worst_observed_ms", **client)] == 2.6
    assert m[key("paam_client_latency_us", **client, quantile="0.5")] == 801.0
    assert m[("paam_violations_total", ())] == 4
    assert m[("paam_epsilon_ms", (("kind", "used"),))] == 0.05
    assert m[("paam_epsilon_ms", (("kind", "observed_p99"),))] == 0.08
    assert ("paam_kappa_ms", (("kind", "observed_p99"),)) not in m  # not observed: no sample
    assert m[("paam_server_requests_total", (("outcome", "completed"),))] == 600
    assert m[("paam_active_clients", ())] == 3
    assert 'paam_server_info{admission="analysis",backend="cpu"' in text
    # the logger has no bound: no bound sample, rather than a made-up one
    assert not any(k[0] == "paam_client_bound_ms" and ("client", "logger") in k[1] for k in m)


def test_metrics_without_a_server_answer_up_zero():
    from paam.observe_tools.prom import PaamCollector

    def fetch():
        raise ToolError("no paamd at /x: start one with `paam serve`")
    collector = PaamCollector(fetch)
    _, m = _scrape(collector)
    assert m == {("paam_up", ()): 0}
    assert "no paamd at /x" in collector.last_error


def test_metrics_ask_paamd_at_most_once_per_interval():
    from paam.observe_tools.prom import PaamCollector
    calls, now = [], [0.0]

    def fetch():
        calls.append(1)
        return snapshot()
    c = PaamCollector(fetch, min_interval=1.0, clock=lambda: now[0])
    _scrape(c)
    now[0] = 0.5
    _scrape(c)
    assert len(calls) == 1
    now[0] = 1.6
    _scrape(c)
    assert len(calls) == 2


@pytest.mark.parametrize("argv,why", [(["metrics", "--port", "70000"], "--port must be 0..65535"),
                                      (["metrics", "--port", "0", "--interval", "-1"],
                                       "--interval must be 0 or more")])
def test_metrics_refuses_bad_options(argv, why, capsys):
    rc, _, err = _run_cli(argv, capsys)
    assert rc == 2 and why in err


def test_metrics_help_warns_that_client_names_are_revealed(capsys):
    with pytest.raises(SystemExit):
        cli.main(["metrics", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "127.0.0.1" in out and "reveal client names" in out


# -- ROS 2 diagnostics (the message-free part; the topic itself: tests/ros/test_diagnostics.py) ----


def test_diagnostic_statuses_one_per_lane_and_client_warn_on_violations():
    from paam.ros.diagnostics import ERROR, OK, WARN, statuses
    entries = statuses(snapshot(), hardware_id="hw")
    names = [e[1] for e in entries]
    assert names == ["paamd", "paamd: unit 0 bucket 0 lane 0", "paamd: unit 0 bucket 1 lane 0",
                     "paamd: unit 0 bucket 2 lane 0", "paamd: client perception (id 1)",
                     "paamd: client planner (id 2)", "paamd: client logger (id 3)"]
    level = {e[1]: e[0] for e in entries}
    assert level["paamd: client perception (id 1)"] == WARN
    assert level["paamd: client planner (id 2)"] == OK
    perception = dict(entries[4][3])
    assert perception["violations"] == "4" and perception["bound_ms"] == "2.000"
    assert "worst 2.600 ms against a bound of 2.000 ms" in entries[4][2]
    assert dict(entries[0][3])["epsilon_ms_observed_p99"] == "0.080"
    down = statuses(None, hardware_id="hw", error="no paamd at /x")
    assert [(e[0], e[1], e[2]) for e in down] == [(ERROR, "paamd", "no paamd at /x")]


# -- end to end: a real paamd ----------------------------------------------------------------------


def _real_observe():
    try:
        from paam import observe
    except ImportError:
        pytest.skip("paam.observe is not built into this paam")
    return observe


@pytest.fixture
def live_server():
    """paamd with 2 buckets and observing support, or a skip where this paamd has none."""
    observe = _real_observe()
    with paam.testing.start_server(buckets=2, device_cpu=-2) as srv:
        try:
            observe.stats(srv.socket_path)
        except paam.PaamError as err:
            pytest.skip(f"this paamd answers no statistics: {err}")
        yield srv


def _send(socket, priority, n, name):
    with paam.Client(priority=priority, kernels=["spin"], socket=socket, name=name) as c:
        for _ in range(n):
            c.request("spin", duration_ms=0.2)


def _paam(*args, **kw):
    return subprocess.run([sys.executable, "-m", "paam.cli", *args], capture_output=True,
                          text=True, timeout=120, **kw)


def test_top_once_json_against_paamd(live_server):
    _send(live_server.socket_path, 7, 5, "e2e-high")
    _send(live_server.socket_path, 1, 3, "e2e-low")
    res = _paam("top", "--once", "--json", "--socket", live_server.socket_path)
    assert res.returncode == 0, res.stderr
    snap = json.loads(res.stdout)
    assert snap["server"]["pid"] == live_server.pid
    assert snap["totals"]["requests_completed"] >= 8
    assert sum(l["served"] for l in snap["lanes"]) >= 8
    res = _paam("top", "--once", "--socket", live_server.socket_path)
    assert res.returncode == 0 and "lanes" in res.stdout


def test_tools_without_paamd_say_how_to_start_one(tmp_path):
    _real_observe()
    socket = str(tmp_path / "none.sock")
    for argv in (["top", "--once", "--json"], ["trace", "--duration", "1", "-o",
                                                str(tmp_path / "t.json")]):
        res = _paam(*argv, "--socket", socket)
        assert res.returncode == 2 and res.stdout == ""
        assert f"no paamd at {socket}: start one with `paam serve`" in res.stderr


def test_trace_against_paamd_records_known_requests_in_order(live_server, tmp_path):
    out = tmp_path / "trace.json"
    proc = subprocess.Popen([sys.executable, "-m", "paam.cli", "trace", "--duration", "8", "-o",
                             str(out), "--socket", live_server.socket_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # once paamd records (the tool says so), send 6 requests one after another
        line = ""
        while not line.startswith("recording paamd") and proc.poll() is None:
            line = proc.stderr.readline()
        assert line.startswith("recording paamd"), line + proc.stderr.read()
        _send(live_server.socket_path, 5, 6, "e2e-traced")
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    assert re.search(r"\b6 requests recorded, 0 dropped", stdout), stdout
    doc = json.loads(out.read_text())
    assert trace_problems(doc) == []
    lane = [e for e in doc["traceEvents"] if e.get("cat") == "lane"]
    assert [e["args"]["sequence"] for e in lane] == sorted(e["args"]["sequence"] for e in lane)
    assert {e["args"]["client"] for e in lane} == {"e2e-traced"}
    assert sum(e.get("cat") == "device" for e in doc["traceEvents"]) == 6


def test_metrics_scraped_over_http(live_server):
    _send(live_server.socket_path, 3, 4, "e2e-metrics")
    proc = subprocess.Popen([sys.executable, "-m", "paam.cli", "metrics", "--port", "0",
                             "--socket", live_server.socket_path, "--interval", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
        assert m, line + proc.stderr.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/metrics", timeout=30) as r:
            text = r.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    from prometheus_client.parser import text_string_to_metric_families
    values = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            values.setdefault(s.name, []).append(s)
    assert values["paam_up"][0].value == 1
    assert sum(s.value for s in values["paam_requests_total"]) >= 4
    mine = [s for s in values.get("paam_client_requests_total", [])
            if s.labels["client"] == "e2e-metrics"]
    assert not mine or mine[0].value == 4  # reaped clients may already be gone


def test_live_top_in_a_terminal_quits_on_q_and_restores_it(live_server):
    import pty
    import select
    import termios

    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    proc = subprocess.Popen([sys.executable, "-m", "paam.cli", "top", "--socket",
                             live_server.socket_path, "--interval", "0.2"],
                            stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)
    out = bytearray()

    def drain(done, timeout):
        """Read the terminal (so that top never blocks writing to it) until done()."""
        deadline = time.monotonic() + timeout
        while not done() and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    out.extend(os.read(master, 65536))
                except OSError:
                    return

    try:
        drain(lambda: out.count(b"lanes") >= 2, 60)  # two frames drawn
        assert out.count(b"lanes") >= 2, bytes(out[-2000:])
        os.write(master, b"q")
        drain(lambda: proc.poll() is not None, 30)
        assert proc.poll() == 0
        drain(lambda: False, 0.3)
        assert b"\x1b[?1049h" in out and b"\x1b[?1049l" in out  # left the alternate screen
        assert termios.tcgetattr(slave) == before                # cbreak undone
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        os.close(slave)
