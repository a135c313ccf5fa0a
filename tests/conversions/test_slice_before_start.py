"""XLA406's clamped slice start, proven by running (protocol: README.md): the converted
context-cropping loop trains on the XLA device with the original's losses, where the
unclamped slice raises on its first short sequence."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla


def test_context_crop_is_clamped_and_trains_on_xla():
    result = prove(FIXTURES / "context_crop.py", steps=4)
    assert_proven(result)
    assert "XLA406" in result.applied and "XLA406" not in result.remaining
    assert "tokens[:, -min(CONTEXT, tokens.shape[1]):]" in result.converted_source
