"""A CUDA device kept in a settings dict (``settings["run"]["device"] = "cuda"``), proven by
running (protocol: README.md): the safe conversion makes the entry the XLA device, so the
model and the data it places train on XLA, and nothing is left for review."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla


def test_settings_dict_device_converts_and_trains_on_xla():
    result = prove(FIXTURES / "device_settings_dict.py", steps=3, cuda_shim=True)
    assert_proven(result)
    assert "XLA101" in result.applied and "XLA101" not in result.remaining
    assert '"device": torch_xla.device()' in result.converted_source
