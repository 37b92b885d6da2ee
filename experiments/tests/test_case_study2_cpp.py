"""Case study 2's E0 in C++ (--e0-executor cpp), without running ROS 2: the spec the program
is given, how a missing program is reported, and a failing one reported with its stderr."""
import os
import sys
import time

import pytest


def test_case_study_2_spec_for_the_cpp_e0_follows_the_reference_system(tmp_path):
    """--e0-executor cpp: the C++ program's spec comes from case_study2's description of the
    system: E0's eight nodes in its order, ten callbacks with their priorities (the settings
    connection of the cluster detector at the settings chain's), the hot path's ids."""
    from dataclasses import replace

    from paam_experiments.case_study2 import cpp as case_study2_cpp
    from paam_experiments.case_study2 import graph as cs2
    from paam_experiments.case_study2.config import ProcessConfig
    cfg = ProcessConfig(**{
           "topic_prefix": "/t", "method": "paam", "backend": "cuda", "wait": "suspend",
           "gpu_ms": 2.5, "tpu_ms": 5.0, "scale": 1.0, "warmup_s": 2.0, "duration_s": 150.0,
           "device_cpu": -1, "tpu_cpu": 15, "direct_keeps_priority": False,
           "gpu_socket": "/s/gpu", "tpu_socket": None, "request_priority": "chain",
           "executors": {"E0": cs2.EXECUTORS[0][3]}})
    lines = case_study2_cpp.spec_text(cfg, str(tmp_path / "out.json")).splitlines()
    nodes = [ln.split() for ln in lines if ln.startswith("node ")]
    assert [n[2] for n in nodes] == list(cs2.EXECUTORS[0][3])
    assert all(n[5] == "1" for n in nodes)  # every E0 node runs a GPU segment
    assert [n[2] for n in nodes if n[6] == "1"] == [cs2.TPU_NODE]
    cbs = [ln.split() for ln in lines if ln.startswith("cb ")]
    assert len(cbs) == 10
    by_topic = {(int(c[1]), c[3]): c for c in cbs}
    settings = by_topic[(cs2.NODE_IDS["EuclideanClusterDetector"], "EuclideanClusterSettings")]
    assert settings[2] == "1" and settings[-1] == "EuclideanIntersection"
    assert (int(settings[7]), int(settings[8]), int(settings[9])) == (
        40, cs2.callback_priority("EuclideanClusterDetector", 1)[1], 40)
    fusion = [c for c in cbs if int(c[1]) == cs2.NODE_IDS["PointCloudFusion"]]
    assert [float(c[5]) for c in fusion] == [cs2.FUSE] * 2
    assert [float(c[6]) for c in fusion] == [cs2.CACHE] * 2
    assert f"estimator {cs2.NODE_IDS['ObjectCollisionEstimator']}" in lines
    assert "tpu_socket -" in lines and "drop_tpu 0" in lines  # (PAAM: through paamd)
    # PiCAS invokes directly: the TPU stand-in's kernel on the callback's thread, dropped
    picas = case_study2_cpp.spec_text(replace(cfg, method="picas"), "x").splitlines()
    assert "drop_tpu 1" in picas and "drop_gpu 0" in picas
    # the hot path's wait: --wait unless --hot-wait says otherwise
    assert "hot_wait suspend" in lines and f"hot_priority {cs2.HOT_PRIORITY}" in lines
    spin = case_study2_cpp.spec_text(replace(cfg, hot_wait="spin"), "x").splitlines()
    assert "wait suspend" in spin and "hot_wait spin" in spin


def test_case_study_2_cpp_e0_program_missing_says_how_to_build_it(tmp_path, monkeypatch):
    from paam_experiments.case_study2 import cpp as case_study2_cpp
    not_exe = tmp_path / "paam_cs2_executor"
    not_exe.write_text("")
    monkeypatch.setenv("PAAM_CS2_EXECUTOR", str(not_exe))
    with pytest.raises(FileNotFoundError, match="not an executable file"):
        case_study2_cpp.program()
    monkeypatch.delenv("PAAM_CS2_EXECUTOR")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="make ros"):
        case_study2_cpp.program()


def test_case_study_2_cpp_e0_that_fails_loudly_is_reported_with_its_stderr_not_hung(
        tmp_path, monkeypatch):
    """A program that writes more to stderr than a pipe holds (Fast DDS's warnings over a long
    run) and then fails: its status and the end of its stderr are reported at once, nothing
    blocks on an unread pipe, and the whole of it stays in a file beside the records."""
    from paam_experiments.case_study2 import cpp as case_study2_cpp
    from paam_experiments.case_study2 import graph as cs2
    from paam_experiments.case_study2.config import ProcessConfig
    fake = tmp_path / "fake_executor"
    fake.write_text("#!/bin/sh\nhead -c 300000 /dev/zero | tr '\\0' x >&2\n"
                    "echo >&2; echo 'error: rcl_init: no DDS' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PAAM_CS2_EXECUTOR", str(fake))
    monkeypatch.setattr(case_study2_cpp, "_READY_TIMEOUT_S", 20.0)
    cpu = sorted(os.sched_getaffinity(0))[0]
    cfg = ProcessConfig(**{
           "topic_prefix": "/t", "method": "paam", "backend": "cpu", "wait": "suspend",
           "gpu_ms": 1.0, "tpu_ms": 1.0, "scale": 1.0, "warmup_s": 1.0, "duration_s": 1.0,
           "device_cpu": -1, "tpu_cpu": None, "direct_keeps_priority": False,
           "gpu_socket": "/s/gpu", "tpu_socket": "/s/tpu", "request_priority": "chain",
           "executors": {"E0": cs2.EXECUTORS[0][3]}, "helper_cpus": [cpu],
           "cpus": {"E0": cpu}})
    path = str(tmp_path / "e0")
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="(?s)exited with status 3.*error: rcl_init: no DDS"):
        case_study2_cpp.run(cfg, path, sync={})
    assert time.monotonic() - t0 < 15.0
    assert (tmp_path / "e0.stderr").stat().st_size > 300000

