"""``paam serve --backend cuda`` (paamd) on a machine without a GPU says so plainly: "no CUDA GPU
found", then CUDA's own error name. Skips where a GPU answers or paamd was built without CUDA."""
from __future__ import annotations

import subprocess

import pytest

from paam.testing import find_paamd


def test_paamd_without_a_gpu_says_no_cuda_gpu_found(tmp_path):
    proc = subprocess.Popen([find_paamd(), "--backend", "cuda", "--socket", str(tmp_path / "paamd.sock")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # paamd either exits at once (no GPU, no CUDA build) or says "serving on" (a GPU)
        said = ""
        for line in proc.stdout:
            said += line
            if "serving on" in line:
                pytest.skip("a CUDA GPU is present")
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
    if "built without CUDA" in said:
        pytest.skip("paamd was built without CUDA")
    assert proc.returncode == 1, said
    assert "no CUDA GPU found (cuda" in said, said  # then the error's name, e.g. cudaErrorNoDevice
    assert "cannot start" in said, said
