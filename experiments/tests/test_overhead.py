"""``paam eval overhead``: the local and remote request paths broken into stages that tile the
round trip (smoke runs at CI scale, lower bounds only)."""
import json

import pytest

from eval_helpers import _paam


def _stage_check(stages, names):
    for name in names:
        s = stages[name]
        assert 0 <= s["min"] <= s["mean"] <= s["max"], name
    # The stages tile the round trip: their means add up to its mean.
    total = sum(stages[n]["mean"] for n in names)
    assert total == pytest.approx(stages["round trip"]["mean"], rel=1e-6, abs=0.01)


def test_overhead_breaks_the_local_paths_into_stages(tmp_path):
    from paam_experiments.overhead import LOCAL_STAGES
    r = _paam("eval", "overhead", "--quick", "--paths", "local-cpp,local-python",
              "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "summary.json").read_text())
    names = [n for n, _a, _b in LOCAL_STAGES]
    py = data["results"]["local-python"]["stages"]
    _stage_check(py, names)
    assert py["overhead (round trip - kernel)"]["min"] > 0
    cpp = data["results"]["local-cpp"]["stages"]
    assert cpp["round trip"]["min"] > 0 and set(names) <= set(cpp)
    assert (tmp_path / "stages.png").stat().st_size > 0
    assert "queue + worker wake" in r.stdout


@pytest.mark.ros
def test_overhead_measures_the_remote_ros2_path(tmp_path):
    from paam_experiments.overhead import REMOTE_STAGES
    r = _paam("eval", "overhead", "--quick", "--paths", "remote-ros2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "summary.json").read_text())
    stages = data["results"]["remote-ros2"]["stages"]
    _stage_check(stages, [n for n, _a, _b in REMOTE_STAGES])
    assert stages["request transport (DDS)"]["min"] > 0

