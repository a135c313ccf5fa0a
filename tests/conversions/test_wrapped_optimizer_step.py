"""An optimizer stepped inside a wrapper class's method (held-out 11 aiayn's ScheduledOptim),
proven by running: the inner ``self._inner.step()`` becomes ``xm.optimizer_step(self._inner)``,
the wrapper call and its LR update stay, and the one sync lands in the batch loop, not in the
epoch loop."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove


@pytest.mark.xla
def test_wrapper_step_converts_and_trains_on_xla():
    result = prove(FIXTURES / "wrapped_optimizer_step.py", cuda_shim=True)
    assert_proven(result)
    out = result.converted_source
    assert "xm.optimizer_step(self._inner)" in out
    assert "opt.step_and_update_lr()" in out
    assert out.count("torch_xla.sync()") == 1
    batch_loop = out.split("def train_epoch")[1].split("def eval_epoch")[0]
    assert "torch_xla.sync()" in batch_loop
