"""XLA403's removal of an accelerator requirement gate (`if not torch.accelerator.is_available():
... sys.exit(1)`), proven by running (protocol: README.md): the converted trainer runs on the
XLA device with the original's losses."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla

GATE = (
    "    if not torch.accelerator.is_available():\n"
    '        print("this example needs an accelerator (CUDA, XPU, MPS)")\n'
    "        sys.exit(1)\n"
)


def test_the_accelerator_gate_goes_and_the_conversion_trains_on_xla(tmp_path: Path):
    fixture = FIXTURES / "accel_gate_trainer.py"
    source = fixture.read_text()
    assert source.count(GATE) == 1
    # The CPU baseline is the original on a host with an accelerator, where the gate passes.
    baseline = tmp_path / fixture.name
    baseline.write_text(source.replace(GATE, ""))
    result = prove(fixture, steps=3, cuda_shim=True, baseline=baseline)
    assert_proven(result)
    assert "XLA403" in result.applied and "XLA403" not in result.remaining
    assert "accelerator.is_available" not in result.converted_source
    assert "    # no accelerator, no training: say so and stop\n" in result.converted_source
