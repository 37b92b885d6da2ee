"""Command-line options the experiments share: paamd's knobs, ``--keep-awake``, ``--gc`` and
``--executor-wait``, and their argument types."""
from __future__ import annotations

import argparse

from paam.argtypes import positive_int
from paam_experiments.common.collector import GC_MODES


def poll_us(text: str) -> str:
    """``--server-poll-us``: microseconds (0 or more) or "always"."""
    if text == "always" or (text.isdigit() and int(text) >= 0):
        return text
    raise argparse.ArgumentTypeError(f"expected microseconds (0 or more) or 'always', got {text!r}")


def cuda_wait(text: str) -> str:
    """paamd's --cuda-wait forms (core's ParseCudaWait): spin, poll, block, nap, nap:US."""
    if text in ("spin", "poll", "block", "nap"):
        return text
    us = text[4:] if text.startswith("nap:") else ""
    if us.isdigit() and 1 <= int(us) <= 10000 and str(int(us)) == us:
        return text
    raise argparse.ArgumentTypeError(
        f"expected spin, poll, block, nap or nap:US (US = 1..10000), got {text!r}")


def add_server_arguments(p: argparse.ArgumentParser) -> None:
    """paamd's options shared by the case studies (their dests are
    :class:`paam_experiments.common.server.ServerOptions`' fields)."""
    p.add_argument("--server-poll-us", type=poll_us, default=None, metavar="US|always",
                   help="paamd's busy-poll window (its --poll-us) before its dispatcher and "
                        "workers sleep on a futex (default: paamd's own, 50 us; 'always': they "
                        "never sleep). paamd runs on cores no executor uses, so a long window "
                        "costs those cores only; it spares a request the wake-up of a sleeping "
                        "server thread, which is slow on a VM whose idle vCPUs halt")
    p.add_argument("--server-pin", action="store_true",
                   help="pin paamd's dispatcher and workers one per core of paamd's own cores "
                        "(its --thread-cpus; with --server-poll-us always a never-sleeping "
                        "thread then never shares a core); ignored when paamd has fewer cores of "
                        "its own than threads")
    p.add_argument("--server-cores", type=positive_int, default=None, metavar="N",
                   help="confine paamd's threads to the first N of the cores no executor uses "
                        "(default: all of them). On a VM the host steals only from vCPUs that "
                        "run: paamd's threads on fewer cores leave more of the vCPUs idle")
    p.add_argument("--server-spin-buckets", type=positive_int, default=None, metavar="N",
                   help="paamd's --spin-buckets: its dispatcher and the workers of its N most "
                        "urgent buckets never sleep, and on the cuda backend those workers spin "
                        "on their GPU work; the other threads keep --server-poll-us and "
                        "--server-cuda-wait. The critical chains' round trip without a "
                        "wake-up, at a busy core per such thread (not one per thread as with "
                        "--server-poll-us always); ignored where paamd has fewer cores of its "
                        "own than N + 1")
    p.add_argument("--server-cuda-wait", type=cuda_wait, default=None,
                   metavar="spin|poll|block|nap[:US]",
                   help="how paamd's CUDA workers wait for their GPU work (its --cuda-wait; "
                        "default: paamd's own, nap, or $PAAM_CUDA_WAIT): spin on a word the "
                        "stream writes keeps a core busy while a request's kernel runs; block "
                        "sleeps in the driver (each request ends about 0.1 ms later on an H100); "
                        "nap looks at spin's word between sleeps of US us (default 50; about "
                        "35 us later). On a VM the spinning vCPUs are ones the host may then "
                        "steal from")
    p.add_argument("--dispatcher-priority", type=int, default=None, metavar="N",
                   help="SCHED_FIFO priority of paamd's dispatcher (its --dispatcher-priority; "
                        "default: one above the most urgent executor, 91 in the shipped "
                        "systems, so that a critical request never waits for an executor's CPU "
                        "work where they share a core; paamd --rt's own default, one above its "
                        "top bucket, can sit below the executors)")


def add_keep_awake_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep-awake", action="store_true",
                   help="one SCHED_IDLE busy loop per core during the runs of every method "
                        "(user space's idle=poll): a woken thread then does not wait for its "
                        "halted virtual CPU to be resumed (on a VM) or for a C-state exit. "
                        "On a VM whose host is short of CPUs it can raise the worst case: the "
                        "never-idle guest then loses whole vCPUs for a host slice; look at "
                        "host_stat.csv before trusting a maximum taken with it")


def add_executor_wait_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor-wait", default="own", choices=("own", "rclpy"),
                   help="how the PicasExecutor (PiCAS and PAAM) waits for work: with its own "
                        "wait, which keeps the entity lists and the wait set between waits "
                        "(default), or through rclpy's, which rebuilds both in Python at every "
                        "wait (paam.ros._readiness)")


def add_gc_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gc", default="default", choices=GC_MODES,
                   help="Python's cyclic garbage collector in each executor process during the "
                        "measured run: as Python has it (default); frozen once the process is "
                        "set up (gc.freeze: what exists then is never scanned again, so "
                        "collections stay short); or off (gc.disable: no collector pauses, "
                        "cycles kept until the run ends). Its pauses are recorded either way")
