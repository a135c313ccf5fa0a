"""XLA501 on torch_xla 1.13's AMP forms that torch_xla 2.9 no longer takes (MLPerf's UNet3D
XLA trainer, held-out 70): ``import torch_xla.amp.grad_scaler`` (ModuleNotFoundError at the
import) and ``torch_xla.amp.autocast(enabled=...)`` (TypeError: the device comes first now)."""

import os
import subprocess
import sys

import pytest

from tests.helpers import findings, fixed

TRAINER = """
import torch
import torch_xla
import torch_xla.amp
import torch_xla.amp.grad_scaler
import torch_xla.core.xla_model as xm


class Trainer:
    def __init__(self, amp):
        self.amp = amp
        self.scaler: torch_xla.amp.GradScaler = torch_xla.amp.grad_scaler.GradScaler()

    def forward(self, model, x):
        with torch_xla.amp.autocast(enabled=self.amp):
            return model(x)


device = xm.xla_device()
torch.manual_seed(0)
model = torch.nn.Linear(4, 2).to(device)
out = Trainer(True).forward(model, torch.ones(3, 4, device=device))
print("dtype", out.dtype)
"""


def _messages(code: str) -> list[str]:
    return [f.message for f in findings(code, "XLA501")]


def test_the_removed_scaler_module_is_an_error_removed_once_its_calls_are_rewritten():
    (f,) = [f for f in findings(TRAINER, "XLA501") if "grad_scaler no longer" in f.message]
    assert f.span.start.line == 3 and f.fix is not None and f.fix.safe
    assert 'use torch.amp.GradScaler("xla")' in f.message
    out = fixed(TRAINER, "XLA501")
    assert "import torch_xla.amp.grad_scaler" not in out
    assert 'torch.amp.GradScaler("xla")' in out and "import torch_xla.amp\n" in out


def test_the_import_stays_where_something_else_reads_the_module():
    other_read = TRAINER.replace(
        'print("dtype", out.dtype)', "print(torch_xla.amp.grad_scaler.__name__)"
    )
    (f,) = [f for f in findings(other_read, "XLA501") if "grad_scaler no longer" in f.message]
    assert f.fix is None and "Remove the import" in f.manual
    # The removed statement also bound torch_xla: with no other import of it, left to the user.
    alone = "import torch_xla.amp.grad_scaler\nscaler = torch_xla.amp.grad_scaler.GradScaler()\n"
    (f,) = [f for f in findings(alone, "XLA501") if "grad_scaler no longer" in f.message]
    assert f.fix is None
    from_form = "import torch_xla\nfrom torch_xla.amp import grad_scaler\n"
    (f,) = [f for f in findings(from_form, "XLA501") if "grad_scaler no longer" in f.message]
    assert f.fix is None


def test_a_deviceless_xla_autocast_becomes_the_xla_autocast():
    (f,) = [f for f in findings(TRAINER, "XLA501") if "autocast" in f.message]
    assert f.message.startswith("torch_xla.amp.autocast() raises TypeError in torch_xla 2.9")
    assert f.fix is not None and f.fix.safe
    out = fixed(TRAINER, "XLA501")
    assert 'with torch.autocast("xla", dtype=torch.bfloat16, enabled=self.amp):' in out
    kept = TRAINER.replace("enabled=self.amp", "enabled=self.amp, dtype=torch.float16")
    assert 'torch.autocast("xla", dtype=torch.float16, enabled=self.amp)' in fixed(kept, "XLA501")
    # The 2.x signature (device first) is left alone.
    modern = TRAINER.replace("autocast(enabled=self.amp)", "autocast(xm.xla_device())")
    assert not [m for m in _messages(modern) if "autocast" in m]


@pytest.mark.xla
def test_the_original_fails_and_the_fixed_trainer_runs_in_bf16(tmp_path):
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONWARNINGS": "ignore"}
    runs = {}
    for name, text in (("original", TRAINER), ("fixed", fixed(TRAINER, "XLA501"))):
        script = tmp_path / f"{name}.py"
        script.write_text(text, encoding="utf-8")
        runs[name] = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240
        )
    assert runs["original"].returncode != 0
    assert "No module named 'torch_xla.amp.grad_scaler'" in runs["original"].stderr
    assert runs["fixed"].returncode == 0, runs["fixed"].stderr[-800:]
    assert "dtype torch.bfloat16" in runs["fixed"].stdout
