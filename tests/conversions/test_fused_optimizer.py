"""XLA119's removal of fused=True, proven by running (protocol: README.md): unconverted, the
script cannot even build its optimizer on the XLA device; converted, it trains there with the
original's losses."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla


def test_fused_adamw_is_dropped_and_the_conversion_trains_on_xla():
    fixture = FIXTURES / "fused_adamw.py"
    assert "fused=True" in fixture.read_text()
    result = prove(fixture, steps=3)
    assert_proven(result)
    assert "XLA119" in result.applied and "XLA119" not in result.remaining
    assert "fused" not in result.converted_source.split("optimizer = ", 1)[1].split("\n", 1)[0]
    assert "    # The fused kernel: one launch per step on the GPU.\n" in result.converted_source
