"""Held-out 109: nanoChatGPT's reward trainer inherits ``setup_model`` from a base class in
another module that wraps the model in DDP, so ``xm.optimizer_step`` would all-reduce the
gradients a second time (review, not safe); minimalRL's ``seed_test`` helper trains a model
it builds and never places, which is no reason to convert the helper."""

from __future__ import annotations

from pathlib import Path

from xla_lens.engine.analysis import analyze

from tests.helpers import src

BASE = src("""
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, ddp):
        self.ddp = ddp

    def setup_model(self, model):
        model = model.to("cuda")
        if self.ddp:
            model = DDP(model, device_ids=[0])
        return model
""")

REWARD = src("""
import torch
from trainer import Trainer


class RewardModelTrainer(Trainer):
    def __init__(self, model, loader):
        super().__init__(True)
        self.model = self.setup_model(model)
        self.loader = loader
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self):
        for x in self.loader:
            loss = self.model(x).sum()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
""")


def _findings(root: Path, name: str, text: str, code: str) -> list:
    script = root / name
    script.write_text(text)
    return [f for f in analyze(text, str(script)).findings if f.code == code]


def test_an_inherited_method_that_wraps_in_ddp_makes_the_xla_step_wait_for_review(tmp_path):
    (tmp_path / "trainer.py").write_text(BASE)
    (f,) = _findings(tmp_path, "reward_trainer.py", REWARD, "XLA105")
    assert f.fix is not None and not f.fix.safe
    assert "`self.setup_model()`" in f.fix.review_reason
    assert "DistributedDataParallel" in f.fix.review_reason


def test_without_the_wrap_in_the_base_class_the_step_stays_safe(tmp_path):
    (tmp_path / "trainer.py").write_text(
        BASE.replace("            model = DDP(model, device_ids=[0])\n", "            pass\n")
    )
    (f,) = _findings(tmp_path, "reward_trainer.py", REWARD, "XLA105")
    assert f.fix is not None and f.fix.safe, f.fix.review_reason


UTILS = src("""
import torch


def seed_test(env, device):
    print("device:", device)

    class TestModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 1)
            self.optimizer = torch.optim.Adam(self.parameters(), lr=0.0001)

        def step(self, x):
            loss = self.fc(x).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return loss

    model = TestModel()
    for i in range(100):
        loss = model.step(torch.rand(4))
    print(loss)
""")

DQN = src("""
import torch
import utils


class DQN:
    def __init__(self, env):
        self.device = torch.device("cuda")
        utils.seed_test(env, self.device)
""")


def test_a_helper_loop_over_a_model_it_never_places_is_no_evidence(tmp_path):
    (tmp_path / "utils.py").write_text(UTILS)
    assert _findings(tmp_path, "dqn.py", DQN, "XLA118") == []


def test_a_helper_loop_that_places_its_batches_still_is(tmp_path):
    placed = UTILS.replace("model.step(torch.rand(4))", "model.step(torch.rand(4).to(device))")
    (tmp_path / "utils.py").write_text(placed)
    found = _findings(tmp_path, "dqn.py", DQN, "XLA118")
    assert [f.code for f in found] == ["XLA118"]
    assert "XLA107" in found[0].message


TWO_TRAINERS = src("""
import torch
from trainer import Trainer


class RewardModelTrainer(Trainer):
    def __init__(self, model):
        super().__init__(True)
        self.model = self.setup_model(model)


class ProbRewardModelTrainer(Trainer):
    def __init__(self, model):
        super().__init__(True)
        self.model = self.setup_model(model)
""")


def test_a_second_class_calling_the_same_inherited_helper_is_pointed_at_the_first(tmp_path):
    (tmp_path / "trainer.py").write_text(BASE)
    found = _findings(tmp_path, "reward_trainer.py", TWO_TRAINERS, "XLA118")
    assert [f.span.start.line for f in found] == [7, 13]
    assert "as the call at line 8 does" in found[1].message
