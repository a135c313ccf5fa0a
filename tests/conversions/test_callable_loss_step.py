"""A step inside a callable object the loop is handed (held-out 98, ChineseNMT's
``run_epoch(data, model, loss_compute)`` calling ``LossCompute.__call__``, which runs backward
and the optimizer step), proven by running: the loop is the training loop, so it gets its
sync, and the converted script trains on the XLA device with the original's losses."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove


@pytest.mark.xla
def test_a_loop_calling_a_step_object_gets_its_sync_and_trains_on_xla():
    result = prove(FIXTURES / "callable_loss_step.py", cuda_shim=True)
    assert_proven(result)
    out = result.converted_source
    assert "        loss = loss_compute(model(x), y)\n" in out
    loop = out.split("def run_epoch", 1)[1].split("def main", 1)[0]
    assert "torch_xla.sync()" in loop
