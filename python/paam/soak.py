"""A fault and soak test of paamd: client processes under load, clients killed and paamd
restarted at random, every request accounted for. ``paam soak`` is its command line.

:func:`run_soak` starts paamd on a private socket and ``clients`` worker processes
(``python -m paam.soak worker ...``). Each worker registers a :class:`paam.Client` and sends
requests one after another: ``vector_add`` on inputs whose first element is the request's
sequence number (so an answer that belongs to an earlier request is told apart from a wrong
one), and ``spin`` of a random length, now and then long enough to be running when a kill
lands. It checks every result, and tells the soak process on its stdout, one line per event::

    R <server pid>          registered
    C <code>                could not register (paamd down or restarting); retries
    S <seq> <kernel>        about to submit request <seq>
    A <seq> ok|wrong|dup    the answer: correct, wrong, or the output of an earlier request
    E <seq> <code>          a clear error (e.g. server_died), then it registers again
    T <seq>                 no answer within the answer timeout
    B                       leaving on request (stdin closed)

Meanwhile the soak process SIGKILLs a random worker about every ``kill_every_s`` seconds (and
starts a new one in its slot) and restarts paamd about every ``restart_every_s`` seconds,
alternately by SIGKILL and SIGTERM, then a new paamd on the same socket. Restarts stop in the
last quarter of the run, so the paamd that is checked at the end has seen client kills of its
own. At the end the workers are asked to leave, and the last paamd's descriptors
(``/proc/<pid>/fd``) and memfd mappings (``/proc/<pid>/maps``) must come back to what a fresh
paamd holds.

A request is *lost* when a worker that was not killed said ``S`` and never answered it (no
answer within the timeout, a worker that hung or crashed); *duplicated* when a second answer
came for one sequence number, an answer for one never submitted, or an output that belongs to
an earlier request. A run passes with nothing lost, duplicated or wrong, no worker crashed, no
paamd that died on its own or failed to stop on SIGTERM, and no leak.
"""
from __future__ import annotations

import dataclasses
import os
import random
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Callable, Optional

# the kinds of work a worker sends, and how often
VECTOR_SHARE = 0.7     # else spin
LONG_SPIN_SHARE = 0.02  # of spins: long enough that kills and restarts land mid-kernel
LONG_SPIN_MS = 200.0
MAX_SPIN_MS = 5.0
MAX_VECTOR = 4096
# Why a registration may fail while paamd restarts; a worker retries these and gives up on others.
TRANSIENT = ("server_not_running", "server_died", "timeout", "resource_exhausted")


@dataclasses.dataclass
class SoakConfig:
    """What :func:`run_soak` does. Times in seconds; 0 for ``kill_every_s`` or
    ``restart_every_s`` turns that fault off."""
    duration_s: float
    clients: int = 4
    seed: int = 0
    backend: str = "cpu"
    buckets: int = 2
    kill_every_s: float = 2.0
    restart_every_s: float = 10.0
    answer_timeout_s: float = 60.0   # a request unanswered this long is lost
    settle_timeout_s: float = 30.0   # for the last paamd to release a dead client's resources
    progress_every_s: float = 5.0

    def check(self) -> None:
        """Raises ValueError naming the first setting out of range."""
        if not self.duration_s > 0:
            raise ValueError(f"duration must be a positive number of seconds, got {self.duration_s}")
        if not 1 <= self.clients <= 256:
            raise ValueError(f"clients must be 1..256, got {self.clients}")
        if self.backend not in ("cpu", "cuda"):
            raise ValueError(f"backend must be cpu or cuda, got {self.backend!r}")
        for name in ("kill_every_s", "restart_every_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 (off) or positive, got {getattr(self, name)}")


# -- paamd's resources ------------------------------------------------------------------------

def server_resources(pid: int) -> dict[str, int]:
    """What paamd holds: open descriptors, memfd mappings (the doorbell, and each client's
    channel and regions) and resident memory (kB, for information)."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/maps") as f:
        memfd = sum(1 for line in f if "/memfd:" in line)
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return {"fds": fds, "memfd_maps": memfd, "rss_kb": rss}


def _settled(pid: int, hold_s: float = 0.5, timeout_s: float = 10.0,
             target: Optional[dict] = None, wait: Callable[[float], None] = time.sleep) -> dict:
    """``server_resources(pid)`` once the counts held still for ``hold_s`` (or equal ``target``),
    at most ``timeout_s``."""
    keys = ("fds", "memfd_maps")
    last = server_resources(pid)
    since, deadline = time.monotonic(), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if target is not None and all(last[k] == target[k] for k in keys):
            return last
        if target is None and time.monotonic() - since >= hold_s:
            return last
        wait(0.05)
        now = server_resources(pid)
        if any(now[k] != last[k] for k in keys):
            since = time.monotonic()
        last = now
    return last


# -- the accounting ---------------------------------------------------------------------------

class _Life:
    """One worker process (a slot's incarnation) as its lines tell it."""

    def __init__(self, slot: int, number: int) -> None:
        self.slot, self.number = slot, number
        self.outstanding: dict[int, str] = {}
        self.answered: set[int] = set()
        self.killed = False   # by the soak process: its outstanding request is not lost
        self.left = False     # said B
        self.buffer = b""


class Ledger:
    """Counts what the workers' lines say. Feed lines with :meth:`line`; :meth:`ended` when a
    worker's stdout closes; :meth:`summary` for the figures."""

    def __init__(self) -> None:
        self.submitted = self.served = self.lost = self.duplicated = self.wrong = 0
        self.abandoned = 0  # outstanding in a worker the soak killed: not lost
        self.failed: Counter = Counter()
        self.connect_failed: Counter = Counter()
        self.registrations = 0
        self.crashed = 0
        self.examples: list[str] = []

    def _note(self, text: str) -> None:
        if len(self.examples) < 20:
            self.examples.append(text)

    def line(self, life: _Life, text: str) -> None:
        parts = text.split()
        if not parts:
            return
        kind, who = parts[0], f"client {life.slot}.{life.number}"
        if kind == "S" and len(parts) >= 2:
            seq = int(parts[1])
            self.submitted += 1
            if seq in life.outstanding or seq in life.answered:
                self.duplicated += 1
                self._note(f"{who}: request {seq} submitted twice")
            life.outstanding[seq] = parts[2] if len(parts) > 2 else "?"
        elif kind in ("A", "E", "T") and len(parts) >= 2:
            seq = int(parts[1])
            if seq in life.answered or seq not in life.outstanding:
                self.duplicated += 1
                self._note(f"{who}: an answer to request {seq}, "
                           f"{'answered already' if seq in life.answered else 'never submitted'}")
                return
            kernel = life.outstanding.pop(seq)
            life.answered.add(seq)
            verdict = parts[2] if len(parts) > 2 else "?"
            if kind == "T":
                self.lost += 1
                self._note(f"{who}: {kernel} request {seq} unanswered within the timeout")
            elif kind == "E":
                self.failed[verdict] += 1
            elif verdict == "ok":
                self.served += 1
            elif verdict == "dup":
                self.duplicated += 1
                self._note(f"{who}: {kernel} request {seq} got an earlier request's output: "
                           f"{' '.join(parts[3:])}")
            else:
                self.wrong += 1
                self._note(f"{who}: {kernel} request {seq} wrong: {' '.join(parts[3:])}")
        elif kind == "R":
            self.registrations += 1
        elif kind == "C" and len(parts) >= 2:
            self.connect_failed[parts[1]] += 1
        elif kind == "B":
            life.left = True

    def ended(self, life: _Life, status: Optional[int], stderr_tail: str = "") -> None:
        """``life``'s process is gone (``status`` as Popen's returncode; None: hung, killed by
        the soak at the end). Its unanswered requests are lost unless the soak killed it."""
        if life.killed:
            self.abandoned += len(life.outstanding)
        else:
            if life.outstanding:
                self.lost += len(life.outstanding)
                self._note(f"client {life.slot}.{life.number}: requests "
                           f"{sorted(life.outstanding)} never answered")
            if not life.left or status not in (0, None):
                self.crashed += 1
                tail = stderr_tail.strip().splitlines()[-3:]
                self._note(f"client {life.slot}.{life.number} "
                           f"{'hung' if status is None else f'exited with status {status}'}"
                           f"{': ' + ' | '.join(tail) if tail else ''}")
        life.outstanding.clear()

    def summary(self) -> dict:
        return {"submitted": self.submitted, "served": self.served,
                "failed": dict(sorted(self.failed.items())), "lost": self.lost,
                "duplicated": self.duplicated, "wrong": self.wrong,
                "abandoned_by_killed_clients": self.abandoned}


# -- the soak process -------------------------------------------------------------------------

class _Soak:
    def __init__(self, cfg: SoakConfig, progress: Callable[[str], None]) -> None:
        self.cfg, self.progress = cfg, progress
        self.ledger = Ledger()
        self.sel = selectors.DefaultSelector()
        self.lives: dict[int, tuple[_Life, subprocess.Popen]] = {}  # slot -> the live one
        self.draining: list[tuple[_Life, subprocess.Popen]] = []    # killed, pipe not yet at EOF
        self.numbers = Counter()
        self.kill_rng = random.Random(f"{cfg.seed}:kill")
        self.restart_rng = random.Random(f"{cfg.seed}:restart")
        self.first_kind = self.restart_rng.randrange(2)  # then SIGKILL and SIGTERM alternate
        self.tmp = tempfile.TemporaryDirectory(prefix="paam-soak-")
        self.socket = os.path.join(self.tmp.name, "paamd.sock")
        self.errlog = os.path.join(self.tmp.name, "client-{}.{}.err")
        self.server = None
        self.server_args: list[str] = []
        self.kills = 0
        self.restarts: Counter = Counter()
        self.server_problems: list[str] = []
        self.peak = {"fds": 0, "memfd_maps": 0, "rss_kb": 0}

    # workers

    def spawn(self, slot: int) -> None:
        self.numbers[slot] += 1
        life = _Life(slot, self.numbers[slot])
        err = open(self.errlog.format(slot, life.number), "wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "paam.soak", "worker", self.socket, str(self.cfg.seed),
             str(slot), str(life.number), str(self.cfg.answer_timeout_s)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        err.close()
        os.set_blocking(proc.stdout.fileno(), False)
        self.sel.register(proc.stdout, selectors.EVENT_READ, (life, proc))
        self.lives[slot] = (life, proc)

    def kill_one(self) -> None:
        slot = self.kill_rng.randrange(self.cfg.clients)
        if slot not in self.lives:  # its worker crashed (counted); the slot stays empty
            return
        life, proc = self.lives.pop(slot)
        life.killed = True
        proc.kill()
        self.kills += 1
        self.draining.append((life, proc))
        self.spawn(slot)

    def _stderr_tail(self, life: _Life) -> str:
        try:
            with open(self.errlog.format(life.slot, life.number), "rb") as f:
                return f.read()[-2000:].decode(errors="replace")
        except OSError:
            return ""

    def _eof(self, life: _Life, proc: subprocess.Popen) -> None:
        self.sel.unregister(proc.stdout)
        proc.stdout.close()
        if proc.stdin:
            try:
                proc.stdin.close()
            except OSError:
                pass
        status = proc.wait()
        self.ledger.ended(life, status, "" if life.killed else self._stderr_tail(life))
        if self.lives.get(life.slot, (None,))[0] is life:
            del self.lives[life.slot]
        self.draining = [(l, p) for l, p in self.draining if l is not life]

    def pump(self, timeout_s: float) -> None:
        """Reads what the workers said for up to ``timeout_s`` (returns once something came)."""
        if not self.sel.get_map():
            time.sleep(max(0.0, timeout_s))
            return
        for key, _ in self.sel.select(max(0.0, timeout_s)):
            life, proc = key.data
            try:
                chunk = os.read(key.fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                self._eof(life, proc)
                continue
            data = life.buffer + chunk
            *lines, life.buffer = data.split(b"\n")
            for raw in lines:
                self.ledger.line(life, raw.decode(errors="replace"))

    def pump_until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.pump(min(left, 0.05))
        return True

    # paamd

    def start_server(self) -> None:
        from .testing import ServerProcess, find_paamd, start_server
        if self.server is None:
            try:
                self.server = start_server(backend=self.cfg.backend, buckets=self.cfg.buckets,
                                           socket=self.socket, timeout_sec=30.0)
            except OSError as err:
                raise RuntimeError(f"cannot start paamd ({find_paamd()}): "
                                   f"{err.strerror or err}") from None
            self.server_args = list(self.server.proc.args)
            return
        srv = ServerProcess(self.server_args, self.socket, None)
        if not self.pump_until(lambda: srv.proc.poll() is not None or "serving on " in srv.log(),
                               30.0):
            srv.kill()
            raise RuntimeError(f"paamd did not start again within 30 s:\n{srv.log()[-2000:]}")
        if srv.proc.poll() is not None:
            raise RuntimeError(f"paamd did not start again (status {srv.proc.returncode}):\n"
                               f"{srv.log()[-2000:]}")
        self.server = srv

    def restart_server(self) -> None:
        kind = ("SIGKILL", "SIGTERM")[(self.first_kind + sum(self.restarts.values())) % 2]
        old = self.server
        old.proc.send_signal(getattr(signal, kind))
        if not self.pump_until(lambda: old.proc.poll() is not None, 30.0):
            self.server_problems.append(f"paamd {old.pid} still running 30 s after {kind}")
            old.kill()
        elif kind == "SIGTERM" and old.proc.returncode != 0:
            self.server_problems.append(f"paamd {old.pid} exited with status "
                                        f"{old.proc.returncode} on SIGTERM: {old.log()[-500:]}")
        self.restarts[kind] += 1
        self.pump(self.restart_rng.uniform(0.0, 0.3))  # a while with no paamd at all
        self.start_server()

    def check_server_alive(self) -> None:
        if self.server.proc.poll() is not None:
            self.server_problems.append(f"paamd {self.server.pid} exited by itself with status "
                                        f"{self.server.proc.returncode}: "
                                        f"{self.server.log()[-1000:]}")
            self.start_server()

    def sample(self) -> dict:
        try:
            now = server_resources(self.server.pid)
        except OSError:
            return {}
        for k in self.peak:
            self.peak[k] = max(self.peak[k], now[k])
        return now

    def report_progress(self, elapsed: float) -> None:
        led, now = self.ledger, self.sample()
        fails = sum(led.failed.values())
        self.progress(
            f"soak: {elapsed:5.1f}/{self.cfg.duration_s:g} s  served {led.served}  "
            f"clear errors {fails}  lost {led.lost}  duplicated {led.duplicated}  "
            f"wrong {led.wrong}  client kills {self.kills}  paamd restarts "
            f"{sum(self.restarts.values())}  paamd fds {now.get('fds', '?')} memfd maps "
            f"{now.get('memfd_maps', '?')}")

    # the run

    def run(self) -> dict:
        cfg = self.cfg
        started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.start_server()
        baseline = _settled(self.server.pid)
        self.progress(f"soak: paamd {self.server.pid} on {self.socket}: {baseline['fds']} fds, "
                      f"{baseline['memfd_maps']} memfd mappings when fresh; {cfg.clients} "
                      f"clients for {cfg.duration_s:g} s")
        for slot in range(cfg.clients):
            self.spawn(slot)
        t0 = time.monotonic()
        end, restarts_end = t0 + cfg.duration_s, t0 + 0.75 * cfg.duration_s

        def next_in(every: float) -> float:
            return time.monotonic() + every * self.kill_rng.uniform(0.5, 1.5) if every else float("inf")
        next_kill = next_in(cfg.kill_every_s)
        next_restart = (time.monotonic() + cfg.restart_every_s * self.restart_rng.uniform(0.5, 1.5)
                        if cfg.restart_every_s else float("inf"))
        next_progress = t0 + cfg.progress_every_s
        while (now := time.monotonic()) < end and self.lives:
            self.pump(min(next_kill, next_restart, next_progress, end) - now)
            now = time.monotonic()
            self.check_server_alive()
            if now >= next_kill:
                self.kill_one()
                next_kill = next_in(cfg.kill_every_s)
            if now >= next_restart:
                if now < restarts_end:
                    self.restart_server()
                    next_restart = (time.monotonic() + cfg.restart_every_s
                                    * self.restart_rng.uniform(0.5, 1.5))
                else:
                    next_restart = float("inf")
            if now >= next_progress:
                self.report_progress(now - t0)
                next_progress += cfg.progress_every_s
        elapsed = time.monotonic() - t0
        if next_progress - cfg.progress_every_s < end - 0.5:
            self.report_progress(elapsed)
        during = self.sample()

        # Everyone leaves: stdin closed; each finishes its request and says B.
        self.progress("soak: asking the clients to leave")
        for _, proc in list(self.lives.values()):
            try:
                proc.stdin.close()
            except OSError:
                pass
        if not self.pump_until(lambda: not self.sel.get_map(), cfg.answer_timeout_s + 10.0):
            for key in list(self.sel.get_map().values()):
                life, proc = key.data
                proc.kill()
                self.sel.unregister(proc.stdout)
                proc.stdout.close()
                proc.wait()
                self.ledger.ended(life, None, self._stderr_tail(life))
        self.check_server_alive()
        final = _settled(self.server.pid, timeout_s=cfg.settle_timeout_s, target=baseline)
        leaked = any(final[k] != baseline[k] for k in ("fds", "memfd_maps"))
        self.progress(f"soak: paamd {self.server.pid} after the clients left: {final['fds']} fds, "
                      f"{final['memfd_maps']} memfd mappings (fresh: {baseline['fds']}, "
                      f"{baseline['memfd_maps']})")
        self.server.stop()
        return self._report(started_at, elapsed, baseline, during, final, leaked)

    def _report(self, started_at, elapsed, baseline, during, final, leaked) -> dict:
        led, cfg = self.ledger, self.cfg
        problems = []
        for what in ("lost", "duplicated", "wrong"):
            if getattr(led, what):
                problems.append(f"{getattr(led, what)} request(s) {what}")
        if led.crashed:
            problems.append(f"{led.crashed} client(s) crashed or hung")
        if leaked:
            problems.append(f"paamd leaked: {final['fds']} fds and {final['memfd_maps']} memfd "
                            f"mappings once every client left, {baseline['fds']} and "
                            f"{baseline['memfd_maps']} when fresh")
        problems += self.server_problems
        if elapsed < cfg.duration_s - 1.0:
            problems.append("every client crashed; the run stopped early")
        if led.served == 0:
            problems.append("no request was served")
        return {
            "started": started_at, "seconds": round(elapsed, 1),
            "config": dataclasses.asdict(cfg),
            "requests": led.summary(),
            "clients": {"killed": self.kills, "crashed": led.crashed,
                        "processes": sum(self.numbers.values()),
                        "registrations": led.registrations,
                        "registration_refused": dict(sorted(led.connect_failed.items()))},
            "paamd": {"restarts": dict(self.restarts), "fresh": baseline, "peak": self.peak,
                      "end_of_load": during, "after": final, "leaked": leaked},
            "examples": led.examples, "problems": problems, "ok": not problems,
        }

    def close(self) -> None:
        for life, proc in [*self.lives.values(), *self.draining]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.sel.close()
        if self.server is not None:
            self.server.stop()
        self.tmp.cleanup()


def run_soak(cfg: SoakConfig, progress: Callable[[str], None] = lambda line: print(
        line, file=sys.stderr, flush=True)) -> dict:
    """Runs the soak test; returns its report (a dict, ``report["ok"]`` says whether it passed
    and ``report["problems"]`` why not). Raises ValueError for a bad config, PaamError when
    paamd cannot be found or started."""
    cfg.check()
    soak = _Soak(cfg, progress)
    try:
        return soak.run()
    finally:
        soak.close()


def format_report(r: dict) -> str:
    """The report as a few lines of text."""
    q, c, s = r["requests"], r["clients"], r["paamd"]
    cfg = r["config"]
    fails = ", ".join(f"{k} {v}" for k, v in q["failed"].items()) or "none"
    refused = ", ".join(f"{k} {v}" for k, v in c["registration_refused"].items()) or "none"
    restarts = ", ".join(f"{v} by {k}" for k, v in sorted(s["restarts"].items())) or "none"
    lines = [
        f"paam soak: {r['seconds']:g} s, {cfg['clients']} clients, seed {cfg['seed']}, "
        f"backend {cfg['backend']}, {cfg['buckets']} buckets",
        f"  requests: {q['submitted']} submitted, {q['served']} served correctly, "
        f"{sum(q['failed'].values())} failed with a clear error ({fails}), {q['lost']} lost, "
        f"{q['duplicated']} duplicated, {q['wrong']} wrong; {q['abandoned_by_killed_clients']} "
        f"in flight in killed clients",
        f"  clients: {c['killed']} killed by SIGKILL and started again, {c['crashed']} crashed "
        f"or hung, {c['registrations']} registrations; refused while paamd was down: {refused}",
        f"  paamd: restarted {restarts}; fds {s['fresh']['fds']} fresh, {s['peak']['fds']} at "
        f"most, {s['after']['fds']} after; memfd mappings {s['fresh']['memfd_maps']} fresh, "
        f"{s['peak']['memfd_maps']} at most, {s['after']['memfd_maps']} after",
    ]
    lines += [f"  e.g. {e}" for e in r["examples"][:5]]
    lines.append("  result: ok" if r["ok"] else "  result: FAILED: " + "; ".join(r["problems"]))
    return "\n".join(lines)


# -- the worker -------------------------------------------------------------------------------

def _close(client) -> None:
    """Closes ``client``; a server that died meanwhile is no error here."""
    from .errors import PaamError
    try:
        client.close()
    except PaamError:
        pass


def _worker(socket: str, seed: int, slot: int, number: int, answer_timeout_s: float) -> int:
    import threading

    import numpy as np

    import paam

    stop = threading.Event()

    def watch_stdin() -> None:
        while sys.stdin.buffer.read(4096):
            pass
        stop.set()
    threading.Thread(target=watch_stdin, daemon=True).start()

    def say(*parts: object) -> None:
        os.write(1, (" ".join(str(p) for p in parts) + "\n").encode())

    rng = np.random.default_rng([seed, slot, number])
    client, seq = None, 0
    while not stop.is_set():
        if client is None:
            try:
                client = paam.Client(priority=int(rng.integers(1, 100)),
                                     kernels=["vector_add", "spin"], socket=socket,
                                     wait=str(rng.choice(["suspend", "hybrid"])),
                                     name=f"soak{slot}.{number}")
                say("R", client.server_pid)
            except paam.PaamError as exc:
                say("C", exc.code)
                if exc.code not in TRANSIENT:  # e.g. version_mismatch: no retry helps
                    print(f"soak client {slot}.{number}: cannot register: {exc}",
                          file=sys.stderr, flush=True)
                    return 3
                stop.wait(0.05)
                continue
        seq += 1
        vector = rng.random() < VECTOR_SHARE
        if vector:
            n = int(rng.integers(1, MAX_VECTOR + 1))
            a = rng.standard_normal(n).astype(np.float32)
            b = rng.standard_normal(n).astype(np.float32)
            a[0], b[0] = seq, 0.0  # the answer's first element names its request
            want = a + b
        else:
            ms = LONG_SPIN_MS if rng.random() < LONG_SPIN_SHARE else rng.uniform(0, MAX_SPIN_MS)
            ns = int(ms * 1e6)
        say("S", seq, "vector_add" if vector else "spin")
        try:
            if vector:
                got = client.request("vector_add", a, b, timeout_sec=answer_timeout_s)
            else:
                got = client.request("spin", duration_ns=ns, timeout_sec=answer_timeout_s)
        except paam.PaamTimeout:
            say("T", seq)
            client = _close(client)
            continue
        except paam.PaamError as exc:
            say("E", seq, exc.code)
            client = _close(client)  # server_died: every later request fails too; register again
            continue
        except Exception as exc:  # noqa: BLE001 - an output that does not unpack is wrong
            say("A", seq, "wrong", type(exc).__name__)
            continue
        if vector:
            if got.shape == want.shape and np.array_equal(got, want):
                say("A", seq, "ok")
            elif got.size and float(got[0]).is_integer() and 0 < got[0] < seq:
                say("A", seq, "dup", f"of request {int(got[0])}")
            else:
                say("A", seq, "wrong", f"shape {got.shape} first {got[:1]}")
        else:
            ok = got * 1e6 + 0.5 >= ns
            say("A", seq, *(("ok",) if ok else ("wrong", f"{got} ms for {ns} ns")))
    if client is not None:
        _close(client)
    say("B")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "worker":
        sys.exit(_worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
                         float(sys.argv[6])))
    print("usage: python -m paam.soak worker SOCKET SEED SLOT NUMBER ANSWER_TIMEOUT_S "
          "(started by `paam soak`)", file=sys.stderr)
    sys.exit(2)
