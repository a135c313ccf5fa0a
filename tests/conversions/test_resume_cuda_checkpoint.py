"""XLA115 proven by running (protocol: README.md): a checkpoint the CUDA version wrote, loaded
without map_location, fails on a host without CUDA; the conversion loads it on the CPU and
load_state_dict puts model and optimizer state on the XLA device, resuming the same run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.serialization as serialization
from torch import nn

from .harness import FIXTURES, _env, assert_proven, convert, prove, run_script

pytestmark = pytest.mark.xla

FIXTURE = FIXTURES / "resume_cuda_checkpoint.py"


def _write_checkpoint(path: Path, location: str) -> None:
    """What two Adam steps of the fixture's model leave, saved as if from ``location``."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        optimizer.zero_grad()
        model(torch.randn(4, 8)).pow(2).mean().backward()
        optimizer.step()
    tag = serialization.location_tag
    # torch.save records each storage's device with this function: claim CUDA for all.
    serialization.location_tag = lambda storage: location
    try:
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 2}
        torch.save(state, path)
    finally:
        serialization.location_tag = tag


def test_a_cuda_written_checkpoint_resumes_on_xla(tmp_path: Path):
    cuda_ckpt = tmp_path / "checkpoint.pt"
    cpu_ckpt = tmp_path / "checkpoint_cpu.pt"
    _write_checkpoint(cuda_ckpt, "cuda:0")
    _write_checkpoint(cpu_ckpt, "cpu")
    # The original on a CUDA host loads the same values onto CUDA; on the CPU baseline it
    # reads the CPU-tagged copy of them.
    baseline = tmp_path / "baseline.py"
    baseline.write_text(FIXTURE.read_text().replace('"checkpoint.pt"', '"checkpoint_cpu.pt"'))
    result = prove(
        FIXTURE,
        steps=3,
        extra_files=[cuda_ckpt, cpu_ckpt],
        baseline=baseline,
        workdir=tmp_path / "runs",
    )
    assert_proven(result, rel_tol=1e-4)
    assert "XLA115" in result.applied
    assert 'torch.load(CHECKPOINT, map_location="cpu")' in result.converted_source


def test_without_the_fix_the_cuda_checkpoint_does_not_load(tmp_path: Path):
    _write_checkpoint(tmp_path / "checkpoint.pt", "cuda:0")
    source, applied, _ = convert(FIXTURE.read_text(), FIXTURE.name)
    assert "XLA115" in applied
    unfixed = source.replace('torch.load(CHECKPOINT, map_location="cpu")', "torch.load(CHECKPOINT)")
    assert unfixed != source
    script = tmp_path / FIXTURE.name
    script.write_text(unfixed)
    run = run_script(script, env=_env(3, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1"))
    assert run.returncode != 0
    assert "Attempting to deserialize object on a CUDA device" in run.stderr
