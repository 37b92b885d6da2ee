"""The repository's shape: a product first, its evaluation as an annex.

* The layout the README describes exists, and no scripts live under docs/.
* docs/results/ holds one small summary file per experiment (no per-run folders, no raw series),
  each naming its command, machine, date, code commit and where its raw data lies in history.
* Every figure in docs/img/ is shown by a document.
* The README stays short, and the files git would carry stay small: the checkout travels to the
  GPU machine with the ROS 2 wheels' pack (.whl-xz/) and GoogleTest's sources (.dev/), under a
  64 MiB limit on the tar of all three.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
README_MAX_CHARS = 8000
TREE_MAX_BYTES = 10 * 10**6
SUMMARY_MAX_BYTES = 64 * 2**10
DEVICE_LIMIT = 64 * 2**20
# .whl-xz/ (about 8.7 MiB) and .dev/ (about 1.6 MiB), with some margin.
CARRIED = 11 * 2**20
LAYOUT = ["core/include/paam", "core/src", "python/paam", "python/tests", "ros2/paam_msgs",
          "ros2/picas_rcl", "experiments/paam_experiments", "docs/img", "docs/results", "scripts",
          "Makefile", "README.md"]
DOCS = ["analysis.md", "evaluation.md", "gpu.md", "overhead.md", "ros2.md", "shm_layout.md"]


def _repo_files() -> list[str]:
    """What a commit of this working tree would hold: tracked files that still exist and
    untracked files git does not ignore."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, check=True)
    return sorted({p for p in out.stdout.decode().split("\0") if p and (ROOT / p).is_file()})


def _tar_size(paths: list[str]) -> int:
    """An upper estimate of a ustar archive of these files: a 512-byte header per file and per
    folder that holds one, each file's data padded to 512 bytes, two zero blocks at the end."""
    folders = {str(Path(p).parent) for p in paths} - {"."}
    data = sum(-(-os.path.getsize(ROOT / p) // 512) * 512 for p in paths)
    return 512 * (len(paths) + len(folders)) + data + 1024


def test_the_layout_the_readme_describes_exists():
    missing = [p for p in LAYOUT if not (ROOT / p).exists()]
    assert not missing, f"missing from the layout: {missing}"
    missing_docs = [d for d in DOCS if not (ROOT / "docs" / d).is_file()]
    assert not missing_docs, f"missing from docs/: {missing_docs}"


def test_no_scripts_under_docs():
    scripts = [str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*")
               if p.is_file() and p.suffix in {".py", ".sh", ".ipynb"}]
    assert not scripts, f"scripts belong in experiments/ or scripts/, not docs/: {scripts}"


def test_the_readme_stays_short():
    n = len((ROOT / "README.md").read_bytes())  # bytes, as `wc -c` counts
    assert n <= README_MAX_CHARS, (
        f"README.md has {n} characters (at most {README_MAX_CHARS}): move detail into docs/")


def test_docs_results_holds_one_small_summary_per_experiment_and_no_run_folders():
    entries = sorted(RESULTS.iterdir())
    folders = [p.name for p in entries if p.is_dir()]
    assert not folders, f"docs/results/ holds folders {folders}: keep one summary per experiment " \
        "there and leave raw data in results/ (ignored) or in git history"
    for p in entries:
        assert p.suffix in {".json", ".csv", ".md"}, f"{p.name}: not a summary (JSON or CSV)"
        size = p.stat().st_size
        assert size <= SUMMARY_MAX_BYTES, f"{p.name}: {size} bytes; a summary stays small"


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.name)
def test_each_summary_names_its_command_machine_date_commit_and_raw_data(path):
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert data.get("experiment"), "no 'experiment'"
    raw = data.get("raw_data") or {}
    if "not_in_git" in raw:  # newer runs: the raw data stays with whoever ran them
        assert raw["not_in_git"] and raw.get("paths"), "raw_data: what and where the raw data is"
    else:
        assert re.fullmatch(r"[0-9a-f]{7,40}", raw.get("commit", "")), "raw_data.commit: a commit"
        assert raw.get("paths"), "raw_data.paths: where the raw data lay in that commit's tree"
    for key in ("command", "machine", "date", "code_commit"):
        assert f'"{key}"' in text, f"no '{key}' anywhere in {path.name}"


def test_every_figure_in_docs_img_is_shown_by_a_document():
    docs = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    text = "\n".join(p.read_text(encoding="utf-8") for p in docs)
    unused = [p.name for p in sorted((ROOT / "docs" / "img").iterdir())
              if f"img/{p.name}" not in text]
    assert not unused, f"figures no document shows (remove them): {unused}"


def test_the_tree_stays_under_its_size_limit():
    files = _repo_files()
    size = sum(os.path.getsize(ROOT / p) for p in files)
    assert size <= TREE_MAX_BYTES, (
        f"the repository's files take {size / 1e6:.1f} MB (at most {TREE_MAX_BYTES / 1e6:.0f}): "
        "keep raw results out of the tree (results/ is ignored)")


def test_the_files_leave_the_wheels_room_under_the_device_limit():
    size = _tar_size(_repo_files())
    assert size + CARRIED <= DEVICE_LIMIT, (
        f"the repository's files make a {size / 2**20:.1f} MiB tar; with the wheels and "
        f"GoogleTest ({CARRIED / 2**20:.0f} MiB) that is over the device's "
        f"{DEVICE_LIMIT / 2**20:.0f} MiB")


def test_the_tar_size_counts_headers_padding_and_folders(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_bytes(b"1" * 513)
    (tmp_path / "y").write_bytes(b"")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    # x: header + two data blocks; y: header; folder a: header; the end: two blocks.
    assert _tar_size(["a/x", "y"]) == 512 * 3 + 1024 + 1024
