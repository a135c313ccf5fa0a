"""Training-step idioms of real scripts, proven by running (fixtures/*.py, protocol in
README.md): the step in methods, gradient accumulation, a loader passed in, a checkpoint
helper. The sync must land once per optimizer step — in the batch loop, not in the epoch loop
around it, not in the micro-batch loop — and the converted run must train like the original."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove


@pytest.mark.xla
def test_trainer_methods_with_accumulation_convert_and_train_on_xla():
    result = prove(FIXTURES / "trainer_methods_accumulation.py")
    assert_proven(result)
    out = result.converted_source
    # One sync per batch, at the end of the batch loop in _run_epoch.
    assert out.count("torch_xla.sync()") == 1
    assert "self._run_batch(x, y)\n            torch_xla.sync()" in out
    # The helper's torch.save writes a state dict handed to it: xm.save.
    assert "xm.save(state, filename)" in out
    assert {"XLA101", "XLA107", "XLA108"} <= set(result.applied)
