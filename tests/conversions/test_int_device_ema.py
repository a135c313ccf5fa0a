"""An EMA copy placed with ``.to(device)`` where ``device`` is an integer CUDA index
(``rank % torch.cuda.device_count()``), proven by running (protocol: README.md)."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla

FIXTURE = FIXTURES / "device_int_ema_copy.py"


def test_int_index_ema_copy_converts_and_both_models_train_on_xla(tmp_path):
    # The CPU baseline: no CUDA device to count on this host, so the index is the CPU.
    baseline = tmp_path / "baseline.py"
    baseline.write_text(
        FIXTURE.read_text()
        .replace("rank % torch.cuda.device_count()", '"cpu"')
        .replace("    torch.cuda.set_device(device)\n", "")
    )
    result = prove(FIXTURE, steps=3, baseline=baseline)
    assert_proven(result)
    # Both the EMA copy and the model ended on the XLA device.
    assert [d.split(":")[0] for d in result.converted.param_devices] == ["xla", "xla"]
    src = result.converted_source
    assert "    device = torch_xla.device()\n" in src
    assert "ema = deepcopy(model).to(device)" in src  # the move itself is unchanged
    assert "torch.cuda.set_device" not in src and "= rank % torch.cuda" not in src
    assert "XLA101" not in result.remaining
