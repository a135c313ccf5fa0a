"""XLA401 / XLA404 on values a workspace helper returns as Python numbers, judged by the
helper's text: MP-SENet's ``pesq_score(...)`` returns ``np.mean(...)`` (held-out 144: its
``.item()`` read nothing from the device); InstructLLaMA's ``StatsTracker.get_dict()`` returns
``{"loss": losses.mean().item(), ...}`` (held-out 145: a best-loss message was moved into a
step closure by a safe fix, for nothing). And a parameter used as a step interval
(``if step % steps_freq == 0``) is a number, so a float divided by it is a float."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_calls

from tests.helpers import findings, src


@pytest.fixture(autouse=True)
def _fresh_caches():
    workspace_calls.clear_cache()
    workspace.clear_cache()
    yield
    workspace_calls.clear_cache()
    workspace.clear_cache()


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(code), encoding="utf-8")
    return path


def _codes(script: Path, *codes: str) -> list[tuple[str, int]]:
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return [(f.code, f.span.start.line + 1) for f in result.findings if f.code in codes]


TRAIN = """
import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm
from metrics import pesq_score
from tracker import StatsTracker


def train(model, loader, opt):
    device = torch_xla.device()
    best_val_loss = np.inf
    tracker = StatsTracker()
    for step, (x, y) in enumerate(loader):
        out = model(x.to(device))
        loss = torch.nn.functional.mse_loss(out, y.to(device))
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        tracker.update(loss.detach())
        if step % 100 == 0:
            score = pesq_score(out, y).item()
            val_stats = tracker.get_dict()
            if val_stats["loss"] < best_val_loss:
                best_val_loss = val_stats["loss"]
                print(f"best {best_val_loss:.4f} pesq {score:.3f}")
"""

METRICS = """
import numpy as np


def pesq_score(a, b):
    scores = [float(abs(i)) for i in range(3)]
    scores = np.mean(scores)
    return scores
"""

TRACKER = """
import torch


class StatsTracker:
    def __init__(self):
        self.losses = []

    def update(self, loss):
        self.losses.append(loss)

    def get_dict(self):
        if not self.losses:
            return {}
        losses = torch.stack(self.losses)
        return {"loss": losses.mean().item(), "count": len(self.losses)}
"""


def test_numbers_a_workspace_helper_or_tracker_returns_are_no_device_reads(tmp_path: Path):
    _write(tmp_path / "metrics.py", METRICS)
    _write(tmp_path / "tracker.py", TRACKER)
    script = _write(tmp_path / "train.py", TRAIN)
    assert _codes(script, "XLA401", "XLA404") == []


def test_helpers_that_return_tensors_still_read_the_device(tmp_path: Path):
    _write(tmp_path / "metrics.py", METRICS.replace("np.mean(scores)", "torch.tensor(scores)"))
    _write(
        tmp_path / "tracker.py",
        TRACKER.replace('"loss": losses.mean().item()', '"loss": losses.mean()'),
    )
    script = _write(tmp_path / "train.py", TRAIN)
    found = _codes(script, "XLA401", "XLA404")
    assert ("XLA401", 21) in found  # pesq_score(...).item()
    assert ("XLA404", 23) in found  # val_stats["loss"] < best_val_loss: a tensor test


INTERVAL = """
import logging

import torch
import torch_xla
import torch_xla.core.xla_model as xm

logger = logging.getLogger(__name__)


def train(model, loader, opt, steps_freq):
    device = torch_xla.device()
    running_loss = 0.0
    global_step = 0
    for batch in loader:
        loss = model(batch.to(device)).sum()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        running_loss += loss.item()
        global_step += 1
        if global_step % steps_freq == 0:
            avg_loss = running_loss / steps_freq if global_step > 0 else running_loss
            logger.info(f"loss {avg_loss:.4f}")
            running_loss = 0.0
"""


def test_a_parameter_used_as_a_step_interval_is_a_number():
    # held-out 145's control (tt-inference-server's LoRA runner).
    assert [f for f in findings(INTERVAL, "XLA401") if "avg_loss" in f.message] == []
    unknown = INTERVAL.replace("if global_step % steps_freq == 0:", "if global_step > 10:")
    (f,) = [f for f in findings(unknown, "XLA401") if "avg_loss" in f.message]
    assert "only if `steps_freq` is one" in f.message
