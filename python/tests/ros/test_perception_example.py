"""``paam ros-example perception``: camera -> detector on the critical chain beside a best-effort
node, through paamd on the CPU backend, briefly. Skipped, saying why, where the model plugin was
not built (libtorch not found) or sensor_msgs is missing (outside ``make ros``)."""
import json
import os
import subprocess
import sys

import pytest

from paam.models import find_plugin, find_test_model_tool

try:
    import sensor_msgs.msg  # noqa: F401
    _NO_SENSOR_MSGS = None
except ImportError as err:  # pragma: no cover - depends on the environment
    _NO_SENSOR_MSGS = str(err)
_REQUIRED = os.environ.get("PAAM_REQUIRE_ROS") == "1"

pytestmark = [
    pytest.mark.skipif(find_plugin() is None or find_test_model_tool() is None,
                       reason="the model plugin (libpaam_torch.so) is not next to paamd: libtorch was not "
                              "found when paam was built (apt-get install libtorch-dev, then make install)"),
    pytest.mark.skipif(_NO_SENSOR_MSGS is not None and not _REQUIRED,
                       reason=f"sensor_msgs is not installed: {_NO_SENSOR_MSGS}"),
]


@pytest.fixture(autouse=True)
def _sensor_msgs_required():
    if _NO_SENSOR_MSGS is not None:  # only with PAAM_REQUIRE_ROS=1 (skipped otherwise)
        pytest.fail(f"PAAM_REQUIRE_ROS=1 but sensor_msgs does not import ({_NO_SENSOR_MSGS}): run `make ros` "
                    "(scripts/requirements-ros.txt; on the GPU machine, a wheel pack from scripts/fetch_ros_wheels.sh)")


def _example(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "paam.cli", "ros-example", "perception", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_the_example_reports_the_detector_latency_without_and_with_the_best_effort_load(tmp_path):
    out = _example("--duration", "4", "--rate", "10", "--source", "tool", "--models-dir", str(tmp_path / "m"),
                   "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    for phase in ("alone", "with best-effort load"):
        assert phase in out.stdout
        for series in ("infer_ms", "frame_ms"):
            s = r["phases"][phase][series]
            assert s["count"] >= 3, (phase, series, s)
            assert 0 < s["p50"] <= s["p99"] <= s["max"]
        # a result comes after its frame was captured and includes the infer call
        assert r["phases"][phase]["frame_ms"]["max"] >= r["phases"][phase]["infer_ms"]["p50"]
    assert r["background"]["runs"] >= 1, r["background"]
    assert "random weights" in r["detector"] and "random weights" in r["heavy"]
    # the models made are kept in --models-dir and reused
    assert (tmp_path / "m" / "models.json").exists()
    m = json.loads((tmp_path / "m" / "models.json").read_text())
    assert [x["name"] for x in m["models"]] == ["detector", "heavy"]


def test_a_paamd_without_the_models_is_named_in_the_error():
    import paam
    with paam.testing.start_server(buckets=2) as srv:
        out = _example("--socket", srv.socket_path, "--duration", "2", timeout=120)
    assert out.returncode == 2
    assert "does not serve detector, heavy" in out.stderr and srv.socket_path in out.stderr


def test_bad_arguments_are_named():
    out = _example("--duration", "0", timeout=60)
    assert out.returncode == 2 and "--duration must be at least 1" in out.stderr
