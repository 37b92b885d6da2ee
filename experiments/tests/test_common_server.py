"""The experiments' paamd options (common.server, common.args): what each passes to paamd,
when it is ignored and how the summary names it; and paamd refusing what it cannot apply."""
import subprocess

import pytest


def test_dispatcher_priority_defaults_to_one_above_the_most_urgent_executor():
    import argparse
    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments
    p = argparse.ArgumentParser()
    add_server_arguments(p)
    args = p.parse_args([])
    assert server.dispatcher_args(args, 90) == ["--dispatcher-priority", "91"]
    assert args.dispatcher_priority == 91  # the summary's params record what paamd got
    assert server.dispatcher_args(p.parse_args([]), 99) == ["--dispatcher-priority", "99"]
    assert server.dispatcher_args(p.parse_args(["--dispatcher-priority", "60"]), 90) == [
        "--dispatcher-priority", "60"]
    with pytest.raises(SystemExit, match="1..99"):
        server.dispatcher_args(p.parse_args(["--dispatcher-priority", "100"]), 90)


def test_server_poll_is_passed_only_with_cores_to_spare(capsys):
    import argparse

    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments

    p = argparse.ArgumentParser()
    add_server_arguments(p)
    assert server.server_poll_args(p.parse_args([]), [4, 5], 3) == []
    args = p.parse_args(["--server-poll-us", "always"])
    assert server.server_poll_args(args, [4, 5, 6], 3) == ["--poll-us", "always"]
    assert server.server_poll_label(args) == "always"
    # fewer cores left to paamd than polling threads: ignored, and the summary says so
    assert server.server_poll_args(args, [4, 5], 3) == []
    assert args.server_poll_us is None and server.server_poll_label(args) == "paamd's default"
    assert "ignored" in capsys.readouterr().out
    assert server.server_poll_args(p.parse_args(["--server-poll-us", "200"]), [1], 3) == []
    assert server.server_poll_args(p.parse_args(["--server-poll-us", "0"]), [], 3) == [
        "--poll-us", "0"]
    # --keep-awake leaves the cores of a polling paamd alone
    assert server.awake_cpus([0, 1, 2, 3], [2, 3], p.parse_args([])) == [0, 1, 2, 3]
    assert server.awake_cpus([0, 1, 2, 3], [2, 3],
                             p.parse_args(["--server-poll-us", "always"])) == [0, 1]
    for bad in ("-5", "soon", "1.5"):
        with pytest.raises(SystemExit):
            p.parse_args(["--server-poll-us", bad])


def test_server_spin_buckets_are_passed_only_with_cores_to_spare(capsys):
    import argparse

    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments

    p = argparse.ArgumentParser()
    add_server_arguments(p)
    assert server.spin_bucket_args(p.parse_args([]), 6, [4, 5]) == []
    args = p.parse_args(["--server-spin-buckets", "1"])
    assert server.spin_bucket_args(args, 6, [4, 5]) == ["--spin-buckets", "1"]
    assert server.server_poll_label(args) == "paamd's default, spin buckets 1"
    # at most the paamd's own buckets (the TPU stand-in's paamd has one)
    assert server.spin_bucket_args(p.parse_args(["--server-spin-buckets", "3"]), 1,
                                   [4, 5, 6, 7]) == ["--spin-buckets", "1"]
    # fewer cores than the threads that never sleep: ignored, and the summary says so
    assert server.spin_bucket_args(args, 6, [4]) == []
    assert args.server_spin_buckets is None and "ignored" in capsys.readouterr().out
    for bad in ("0", "-1", "x"):
        with pytest.raises(SystemExit):
            p.parse_args(["--server-spin-buckets", bad])


def test_server_pin_is_passed_only_with_a_core_per_thread(capsys):
    import argparse

    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments

    p = argparse.ArgumentParser()
    add_server_arguments(p)
    args = p.parse_args([])
    assert server.server_poll_args(args, [4, 5, 6], 3) == []
    assert server.server_pin_label(args) == "not pinned"
    args = p.parse_args(["--server-pin"])
    assert server.server_poll_args(args, [4, 5, 6], 3) == ["--thread-cpus", "4,5,6"]
    assert server.server_pin_label(args) == "one per core"
    # two paamds on the same cores take their own shares of them
    assert server.server_poll_args(args, [4, 5, 6], 3, pin_cpus=[6]) == ["--thread-cpus", "6"]
    args = p.parse_args(["--server-poll-us", "always", "--server-pin"])
    assert server.server_poll_args(args, [4, 5, 6, 7], 3) == [
        "--poll-us", "always", "--thread-cpus", "4,5,6,7"]
    # fewer cores than threads: pinning would put two on one core; ignored, and the summary
    # (params, label) says so
    assert server.server_poll_args(args, [4, 5], 3) == []
    assert args.server_pin is False and server.server_pin_label(args) == "not pinned"
    out = capsys.readouterr().out
    assert "--server-pin ignored" in out and "--server-poll-us always ignored" in out
    # the ignored option stays cleared for the second paamd of case study 2
    assert server.server_poll_args(args, [4, 5], 3, pin_cpus=[5]) == []
    assert capsys.readouterr().out == ""


def test_paamd_worker_count_follows_its_lanes():
    from paam_experiments.common import server

    # one per bucket; on cuda the lowest of several buckets has 4 lanes (--be-lanes default)
    assert server.paamd_workers("cuda", 1) == 1
    assert server.paamd_workers("cuda", 6) == 9
    assert server.paamd_workers("cpu", 6) == 6


def test_server_cores_confines_paamd_to_the_first_n_spare_cores(capsys):
    import argparse

    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments

    p = argparse.ArgumentParser()
    add_server_arguments(p)
    args = p.parse_args([])
    assert server.server_cores(args, [0, 1, 6, 7]) == [0, 1, 6, 7]
    assert server.server_pin_label(args) == "not pinned"
    args = p.parse_args(["--server-cores", "2"])
    assert server.server_cores(args, [0, 1, 6, 7]) == [0, 1]
    assert server.server_pin_label(args) == "not pinned, on 2 cores"
    # with too few cores paamd gets them all, and the summary no longer claims the option
    args = p.parse_args(["--server-cores", "3"])
    assert server.server_cores(args, [6, 7]) == [6, 7]
    assert args.server_cores is None and server.server_pin_label(args) == "not pinned"
    assert "--server-cores 3: only 2 core(s)" in capsys.readouterr().out
    # confined cores then bound pinning: fewer cores than threads, so no pinning
    args = p.parse_args(["--server-cores", "2", "--server-pin"])
    assert server.server_poll_args(args, server.server_cores(args, [0, 1, 6, 7]), 3) == []
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(SystemExit):
            p.parse_args(["--server-cores", bad])


def test_server_cuda_wait_reaches_a_cuda_paamd_only_and_the_summary_says_so(tmp_path):
    import argparse
    import subprocess

    from paam_experiments.common import server
    from paam_experiments.common.args import add_server_arguments
    from paam.testing import find_paamd

    p = argparse.ArgumentParser()
    add_server_arguments(p)
    p.add_argument("--backend", default="cpu")
    args = p.parse_args([])
    assert server.cuda_wait_args(args) == [] and server.server_pin_label(args) == "not pinned"
    args = p.parse_args(["--server-cuda-wait", "block", "--backend", "cuda"])
    assert server.cuda_wait_args(args) == ["--cuda-wait", "block"]
    assert server.server_pin_label(args) == "not pinned, CUDA wait block"
    # the CPU backend has no CUDA workers: nothing passed, nothing claimed
    args = p.parse_args(["--server-cuda-wait", "block"])
    assert server.cuda_wait_args(args) == [] and server.server_pin_label(args) == "not pinned"
    args = p.parse_args(["--server-cuda-wait", "nap:200", "--backend", "cuda"])
    assert server.cuda_wait_args(args) == ["--cuda-wait", "nap:200"]
    # none given: paamd's default (or $PAAM_CUDA_WAIT's), named as such
    args = p.parse_args(["--backend", "cuda"])
    assert server.cuda_wait_args(args) == []
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PAAM_CUDA_WAIT", raising=False)
        assert server.server_pin_label(args) == "not pinned, CUDA wait nap (paamd's default)"
        mp.setenv("PAAM_CUDA_WAIT", "block")
        assert server.server_pin_label(args) == "not pinned, CUDA wait block (paamd's default)"
        # the direct methods' clients spin as a plain CUDA program does, unless told
        direct = ["PiCAS", "PAAM"]
        assert server.direct_wait_label(args, direct) == ("direct clients' CUDA wait: block "
                                                          "($PAAM_CUDA_WAIT)")
        mp.delenv("PAAM_CUDA_WAIT")
        assert server.direct_wait_label(args, direct) == ("direct clients' CUDA wait: spin "
                                                          "(CUDA's default for one context)")
        assert server.direct_wait_label(p.parse_args([]), direct) == ""  # the cpu backend
        assert server.direct_wait_label(args, ["PAAM"]) == ""  # no direct client ran
    bad_forms = ("sleepy", "nap:", "nap:0", "nap:10001", "nap:05", "nap:1.5", "nap:-5", "Block")
    for bad in bad_forms:
        with pytest.raises(SystemExit):
            p.parse_args(["--server-cuda-wait", bad])
    # paamd takes the same forms (checked before any GPU is looked for) and refuses every one
    # of these, quoting it: the two checks agree
    for bad in bad_forms:
        r = subprocess.run([find_paamd(), "--cuda-wait", bad], capture_output=True, text=True,
                           timeout=10)
        assert r.returncode == 2 and f"got '{bad}'" in r.stderr and "nap:US" in r.stderr
    usage = subprocess.run([find_paamd(), "--help"], capture_output=True, text=True,
                           timeout=10).stdout
    assert "--cuda-wait MODE" in usage and f"else {server.PAAMD_CUDA_WAIT})" in usage


def test_paamd_refuses_fair_buckets_it_cannot_apply():
    from paam.testing import find_paamd

    for argv, said in ((["--buckets", "2", "--fair-buckets", "3"], "more than the 2 bucket"),
                       (["--backend", "cuda", "--fair-buckets", "1"], "for the cpu backend"),
                       (["--fair-buckets", "-1"], "0 or more"),
                       (["--fair-buckets", "x"], "needs an integer")):
        r = subprocess.run([find_paamd(), *argv], capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and said in r.stderr, (argv, r.stderr)
    assert "--fair-buckets N" in subprocess.run(
        [find_paamd(), "--help"], capture_output=True, text=True, timeout=10).stdout

