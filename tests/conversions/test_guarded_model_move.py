"""A model moved under ``if torch.cuda.is_available():`` (held-out 23, SupContrast), proven by
running: the reviewed move also makes the availability test true, so the block that places
the model runs on the XLA host and the model trains beside its batches there."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove


@pytest.mark.xla
def test_reviewed_moves_under_an_availability_test_convert_and_run_on_xla():
    result = prove(FIXTURES / "guarded_model_move.py", cuda_shim=True, unsafe=True)
    assert_proven(result)
    out = result.converted_source
    assert "    if True:\n" in out and "    if torch.cuda.is_available():" not in out
    assert "model = model.to(torch_xla.device())" in out
