"""Several GPUs behind one paamd: clients named to a unit run there, and unnamed ones are placed
by worst fit on accelerator utilization (PAAM Sec. IV-E3). Skips below two GPUs."""
from __future__ import annotations

import numpy as np
import pytest

import paam


def _gpus_behind_a_server() -> int:
    try:
        with paam.testing.start_server(backend="cuda") as srv:
            for unit in (1, 0):
                try:
                    paam.Client(kernels=["spin"], unit=unit, socket=srv.socket_path).close()
                    return unit + 1
                except paam.PaamError:
                    continue
    except paam.PaamError:
        return 0
    return 0


pytestmark = pytest.mark.skipif(_gpus_behind_a_server() < 2, reason="needs a paamd serving two or more GPUs")


def _timing(chain: str, seg_ms: float) -> paam.TimingModel:
    return paam.TimingModel(chain=chain, period_ms=100.0, segments_ms=[seg_ms], executor=chain)


def test_named_units_run_there_and_unnamed_ones_go_to_the_least_loaded_gpu():
    rng = np.random.default_rng(3)
    with paam.testing.start_server(backend="cuda", buckets=2) as srv:
        named = [paam.Client(priority=5, kernels=["vector_add"], unit=u, socket=srv.socket_path) for u in (0, 1)]
        assert [c.unit for c in named] == [0, 1]
        for c in named:
            a, b = rng.standard_normal(4096).astype(np.float32), rng.standard_normal(4096).astype(np.float32)
            np.testing.assert_array_equal(c.request("vector_add", a, b), a + b)
            c.close()
        # Worst fit: 50 ms of 100 goes to GPU 0 (both empty), then 10 and 20 ms go to GPU 1.
        heavy = paam.Client(priority=3, kernels=["spin"], timing=_timing("heavy", 50), socket=srv.socket_path)
        light = paam.Client(priority=2, kernels=["spin"], timing=_timing("light", 10), socket=srv.socket_path)
        mid = paam.Client(priority=1, kernels=["spin"], timing=_timing("mid", 20), socket=srv.socket_path)
        assert [heavy.unit, light.unit, mid.unit] == [0, 1, 1]
        for c in (heavy, light, mid):
            assert c.request("spin", duration_ms=1) >= 1.0
            c.close()
