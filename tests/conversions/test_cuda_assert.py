"""XLA403's removal of `assert torch.cuda.is_available()`, proven by running (protocol:
README.md): the converted trainer runs on the XLA device with the original's losses."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla

ASSERT = '    assert torch.cuda.is_available(), "CUDA is required"\n'


def test_the_cuda_assert_goes_and_the_conversion_trains_on_xla(tmp_path: Path):
    fixture = FIXTURES / "cuda_assert_trainer.py"
    source = fixture.read_text()
    assert source.count(ASSERT) == 1
    # The CPU baseline is the original on a CUDA host, where the assert passes: without it.
    baseline = tmp_path / fixture.name
    baseline.write_text(source.replace(ASSERT, ""))
    result = prove(fixture, steps=3, cuda_shim=True, baseline=baseline)
    assert_proven(result)
    assert "XLA403" in result.applied and "XLA403" not in result.remaining
    assert "assert torch.cuda" not in result.converted_source
    assert "    # this trainer needs a GPU\n" in result.converted_source
