"""A DDP script whose dataset places its own samples on the device, proven by running
(protocol: README.md).

``pl.MpDeviceLoader`` over such a DataLoader fails on its loader thread once the samples are
XLA tensors, so XLA106's wrap waits for review (saying why), XLA107 syncs the loop instead, and
the batches count as on the device: dropping DDP's ``device_ids`` stays safe.
"""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla

FIXTURE = FIXTURES / "ddp_device_resident_dataset.py"


def test_device_resident_dataset_is_not_wrapped_and_trains_on_xla(tmp_path, monkeypatch):
    # The CPU baseline: one gloo process on the CPU, as torchrun would set it up.
    for key, value in {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29533",
    }.items():
        monkeypatch.setenv(key, value)
    baseline = tmp_path / "baseline.py"
    baseline.write_text(
        FIXTURE.read_text()
        .replace('"nccl"', '"gloo"')
        .replace('torch.device("cuda", args.local_rank)', 'torch.device("cpu")')
        .replace("device_ids=[args.local_rank]", "device_ids=None")
    )
    result = prove(FIXTURE, steps=4, baseline=baseline)
    src = result.converted_source
    assert "MpDeviceLoader(" not in src
    assert "for step, (x, y) in enumerate(loader):" in src
    assert "torch_xla.sync()" in src
    assert "device = torch_xla.device()" in src
    assert "XLA106" in result.remaining  # the wrap waits for review
    assert_proven(result, expect_mp_fn=True, min_steps=4)
