"""Held-out 181 (GPT-SoVITS-TPU, an already-XLA trainer): three wrong findings on its loop.

- ``assert not torch.is_complex(y_hat), f"... {y_hat}"``: ``torch.is_complex`` reads the dtype,
  a Python bool (XLA404 called it a device read), and the message is built only when the
  assertion fails (XLA401 called the f-string a host read every step).
- ``GradScaler(use_zero_grad=True, enabled=...)`` of the removed ``torch_xla.amp``: XLA501's
  safe rewrite carried ``use_zero_grad`` into ``torch.amp.GradScaler("xla", ...)``, which
  raises TypeError (checked below on the installed torch)."""

import pytest

from tests.helpers import findings, fixed, src

LOOP = src("""
import torch
import torch_xla
import torch_xla.core.xla_model as xm


def train(model, loader, optimizer):
    device = torch_xla.device()
    model = model.to(device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        y_hat = model(x)
        ASSERT
        loss = (y_hat - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()
""")


def _reads(code: str) -> list:
    return [f for f in findings(code) if f.code in ("XLA401", "XLA404") and f.span.start.line == 11]


def test_a_dtype_question_in_an_assert_reads_nothing():
    assert _reads(LOOP.replace("ASSERT", 'assert not torch.is_complex(y_hat), "complex!"')) == []
    assert _reads(LOOP.replace("ASSERT", 'assert y_hat.is_floating_point(), "int!"')) == []


def test_an_assert_message_is_built_only_when_it_fails():
    code = LOOP.replace("ASSERT", 'assert not torch.is_complex(y_hat), f"complex: {y_hat}"')
    assert _reads(code) == []


def test_an_assert_on_tensor_values_is_still_reported():
    code = LOOP.replace("ASSERT", 'assert y_hat.abs().max() < 1e4, "diverged"')
    assert _reads(code)


SCALER = src("""
import torch
from torch_xla.amp import GradScaler

scaler = GradScaler(ARGS)
""")


def test_a_scaler_option_torch_amp_lacks_gets_no_rewrite():
    (f,) = [
        f
        for f in findings(SCALER.replace("ARGS", "use_zero_grad=True, enabled=True"), "XLA501")
        if "GradScaler()" in f.message
    ]
    assert f.fix is None


def test_the_shared_options_are_carried_over():
    out = fixed(SCALER.replace("ARGS", "init_scale=2.0, enabled=True"), "XLA501")
    assert 'torch.amp.GradScaler("xla", init_scale=2.0, enabled=True)' in out


def test_torch_amp_grad_scaler_rejects_use_zero_grad():
    with pytest.raises(TypeError, match="use_zero_grad"):
        torch = pytest.importorskip("torch")
        torch.amp.GradScaler("xla", use_zero_grad=True)
