"""A launch inside a wrapper of the script (held-out 97, WaveGrad's ``run_distributed(fn, ...)``
around ``mp.spawn``), proven by running: the function handed to the wrapper is the replicas'
code, so its moves convert with safe fixes (they were held back as launcher-parent code) and
the converted script trains on the XLA device with the original's losses."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove


@pytest.mark.xla
def test_moves_in_the_function_a_launch_wrapper_starts_convert_and_run_on_xla():
    result = prove(FIXTURES / "spawn_wrapper.py", cuda_shim=True)
    assert_proven(result)
    out = result.converted_source
    assert ".cuda()" not in out
    assert "nn.Linear(16, 1)).to(torch_xla.device())" in out
