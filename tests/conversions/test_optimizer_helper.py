"""An optimizer built by a factory of a module beside the script (``get_optimizer(net, ...)``
sorting the Parameters into decay groups, held-out 55's TorchSSL) before the network moves to
the device. XLA109 follows the call into that module; its reorder puts the move first, and the
converted script trains on the XLA device as the original does on the CPU."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove

FOLDER = FIXTURES / "optimizer_helper"


@pytest.mark.xla
def test_the_move_goes_before_the_factory_and_the_model_trains_on_xla():
    result = prove(
        FOLDER / "train_ssl.py", steps=6, in_place=True, extra_files=[FOLDER / "train_utils.py"]
    )
    assert "XLA109" in result.applied, result.describe()
    out = result.converted_source
    assert out.index("trainer.model = trainer.model.to(") < out.index("get_optimizer(")
    assert_proven(result, min_steps=6)
