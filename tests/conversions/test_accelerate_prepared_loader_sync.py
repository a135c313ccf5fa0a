"""accelerate's prepared DataLoader syncs by itself (protocol in README.md): on XLA
``accelerator.prepare`` hands a DataLoader back as an MpDeviceLoader that marks the step at every
fetch, so XLA107 adds no sync to a trainer whose loop fetches from one (a loader prepared onto
``self`` in ``__init__``, drawn through a generator in another method), and the converted trainer
still trains on XLA like the original."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .harness import FIXTURES, _env, assert_proven, prove, run_script

pytest.importorskip("accelerate")

FIXTURE = FIXTURES / "accelerate_trainer_prepared_in_init.py"

COUNT_MARKS = """
import torch
import torch_xla.debug.metrics as met
from accelerate_trainer_prepared_in_init import Trainer
from torch.utils.data import TensorDataset

torch.manual_seed(0)
features = torch.randn(64, 4)  # one pass of 8 batches: no epoch end within 5 steps
dataset = TensorDataset(features, features.sum(dim=1, keepdim=True))
trainer = Trainer(torch.nn.Linear(4, 1), dataset, 5)
print(f"loader: {type(trainer.loader).__name__}")
before = met.counter_value("MarkStep") or 0
trainer.fit()
print(f"marks: {(met.counter_value('MarkStep') or 0) - before}")
"""


@pytest.mark.xla
def test_a_trainer_fed_by_a_prepared_loader_converts_without_a_sync_and_trains():
    result = prove(FIXTURE)
    assert "XLA107" not in result.applied and "XLA107" not in result.remaining
    assert "torch_xla.sync()" not in result.converted_source
    assert_proven(result, min_steps=3)


@pytest.mark.xla
def test_the_prepared_loader_marks_the_step_at_every_fetch(tmp_path: Path):
    shutil.copy(FIXTURE, tmp_path / FIXTURE.name)
    script = tmp_path / "count_marks.py"
    script.write_text(COUNT_MARKS)
    run = run_script(script, env=_env(None, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1"))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "loader: MpDeviceLoaderWrapper" in run.stdout
    # One mark per step's fetch: the graph never spans two steps (the last step's graph is
    # run by its .item(), not by a mark).
    assert "marks: 5" in run.stdout, run.stdout
