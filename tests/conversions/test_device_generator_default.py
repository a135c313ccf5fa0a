"""A seeded CUDA generator, ``torch.set_default_device("cuda")`` and an integer rank handed
to the script's own helper as its device, proven by running (protocol: README.md)."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla

FIXTURE = FIXTURES / "device_generator_default.py"


def test_generator_default_device_and_int_argument_convert_and_train_on_xla(tmp_path):
    baseline = tmp_path / "baseline.py"
    baseline.write_text(
        FIXTURE.read_text()
        .replace('torch.device("cuda")', 'torch.device("cpu")')
        .replace('set_default_device("cuda")', 'set_default_device("cpu")')
        .replace("device=local_rank", "device=device")
    )
    result = prove(FIXTURE, steps=3, baseline=baseline)
    assert_proven(result)
    assert [d.split(":")[0] for d in result.converted.param_devices] == ["xla"]
    src = result.converted_source
    assert "    device = torch_xla.device()\n" in src
    assert 'noise_gen = torch.Generator(device="cpu")\n' in src
    assert "    torch.set_default_device(device)  # every new tensor on the GPU\n" in src
    assert "evaluate(model, held_out, device=device)" in src
    assert "XLA101" not in result.remaining


def test_a_cuda_device_context_becomes_the_xla_device_context(tmp_path):
    fixture = FIXTURES / "device_context.py"
    baseline = tmp_path / "baseline.py"
    baseline.write_text(fixture.read_text().replace('torch.device("cuda")', 'torch.device("cpu")'))
    result = prove(fixture, steps=3, baseline=baseline)
    assert_proven(result)
    assert [d.split(":")[0] for d in result.converted.param_devices] == ["xla"]
    assert "    with torch_xla.device():  # parameters" in result.converted_source
    assert "XLA101" not in result.remaining
