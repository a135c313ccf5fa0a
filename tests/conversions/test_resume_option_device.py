"""XLA115 proven by running (protocol: README.md) on a checkpoint mapped onto the script's
device from a --device option defaulting to CUDA (held-out 42, MedSAM): XLA101 makes the
default the XLA device, and ``torch.load(..., map_location=device)`` would then raise; the
conversion loads on the CPU and load_state_dict puts model and optimizer state on the XLA
device, resuming the same run as the original's on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from .harness import FIXTURES, _env, assert_proven, convert, prove, run_script

pytestmark = pytest.mark.xla

FIXTURE = FIXTURES / "resume_option_device.py"


def _write_checkpoint(path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        optimizer.zero_grad()
        model(torch.randn(4, 8)).pow(2).mean().backward()
        optimizer.step()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 2}
    torch.save(state, path)


def test_a_checkpoint_mapped_onto_the_option_device_resumes_on_xla(tmp_path: Path):
    checkpoint = tmp_path / "checkpoint.pt"
    _write_checkpoint(checkpoint)
    # The original's CPU run: the same script with the option at "cpu".
    baseline = tmp_path / "baseline.py"
    baseline.write_text(FIXTURE.read_text().replace('default="cuda:0"', 'default="cpu"'))
    result = prove(
        FIXTURE, steps=3, extra_files=[checkpoint], baseline=baseline, workdir=tmp_path / "runs"
    )
    assert_proven(result, rel_tol=1e-4)
    assert {"XLA101", "XLA115"} <= set(result.applied)
    assert 'torch.load(CHECKPOINT, map_location="cpu")' in result.converted_source
    assert "# Map the checkpoint onto the training device." in result.converted_source


def test_without_the_load_fix_the_xla_device_cannot_restore_it(tmp_path: Path):
    _write_checkpoint(tmp_path / "checkpoint.pt")
    source, applied, _ = convert(FIXTURE.read_text(), FIXTURE.name)
    assert "XLA115" in applied
    unfixed = source.replace(
        'torch.load(CHECKPOINT, map_location="cpu")', "torch.load(CHECKPOINT, map_location=device)"
    )
    assert unfixed != source
    script = tmp_path / FIXTURE.name
    script.write_text(unfixed)
    run = run_script(script, env=_env(3, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1"))
    assert run.returncode != 0
    assert "don't know how to restore data location" in run.stderr
