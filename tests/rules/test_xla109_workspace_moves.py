"""XLA109 when the move runs in a class of another workspace file: the script builds its
optimizer, then hands model and optimizer to a trainer whose ``__init__`` moves the model
(held-out 34: SimCLR's run.py and simclr.py). On XLA the move replaces the Parameters."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_callers, workspace_calls, workspace_classes

from tests.helpers import src

TRAINER_KWARGS = """
import torch

class Trainer:
    def __init__(self, *args, **kwargs):
        self.args = kwargs["args"]
        self.model = kwargs["model"].to(self.args.device)
        self.optimizer = kwargs["optimizer"]
"""

TRAINER_PARAMS = """
class Trainer:
    def __init__(self, model, optimizer, device):
        self.model = model
        self.model.cuda()
        self.optimizer = optimizer
        self.half = model.to(dtype=None)
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    workspace_calls.clear_cache()
    workspace.clear_cache()
    workspace_classes.clear_cache()
    workspace_callers.clear_cache()
    yield


def _write(path: Path, code: str) -> Path:
    path.write_text(src(code), encoding="utf-8")
    return path


def _xla109(script: Path) -> list:
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return [f for f in result.findings if f.code == "XLA109"]


def test_a_kwargs_entry_moved_by_a_trainer_of_another_file(tmp_path: Path):
    _write(tmp_path / "trainer.py", TRAINER_KWARGS)
    script = _write(
        tmp_path / "run.py",
        """
        import torch
        from trainer import Trainer
        def main(args):
            model = torch.nn.Linear(4, 2)
            optimizer = torch.optim.Adam(model.parameters(), 1e-3)
            t = Trainer(model=model, optimizer=optimizer, args=args)
        """,
    )
    (f,) = _xla109(script)
    assert f.span.start.line == 4 and f.fix is None
    assert "(in trainer.py:6)" in f.message and "stale CPU tensors" in f.message
    assert "the move runs inside `Trainer(...)` (trainer.py:6)" in f.manual


def test_a_positional_parameter_moved_through_self(tmp_path: Path):
    _write(tmp_path / "trainer.py", TRAINER_PARAMS)
    script = _write(
        tmp_path / "run.py",
        """
        import torch
        from trainer import Trainer
        model = torch.nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), 0.1)
        Trainer(model, opt, "cuda")
        """,
    )
    (f,) = _xla109(script)
    assert "(in trainer.py:4)" in f.message


def test_model_moved_before_the_optimizer_is_fine(tmp_path: Path):
    _write(tmp_path / "trainer.py", TRAINER_KWARGS)
    script = _write(
        tmp_path / "run.py",
        """
        import torch
        from trainer import Trainer
        def main(args):
            model = torch.nn.Linear(4, 2).to(args.device)
            optimizer = torch.optim.Adam(model.parameters(), 1e-3)
            Trainer(model=model, optimizer=optimizer, args=args)
        """,
    )
    assert _xla109(script) == []


def test_optimizer_built_after_the_trainer_moved_the_model_is_fine(tmp_path: Path):
    _write(tmp_path / "trainer.py", TRAINER_KWARGS)
    script = _write(
        tmp_path / "run.py",
        """
        import torch
        from trainer import Trainer
        def main(args):
            model = torch.nn.Linear(4, 2)
            t = Trainer(model=model, optimizer=None, args=args)
            t.optimizer = torch.optim.Adam(model.parameters(), 1e-3)
        """,
    )
    assert _xla109(script) == []


def test_a_function_of_another_file_that_moves_the_model_it_is_handed(tmp_path: Path):
    _write(
        tmp_path / "engine.py",
        """
        def train(model, optimizer, loader, device):
            model.to(device)
            for x in loader:
                model(x.to(device)).sum().backward()
                optimizer.step()
        """,
    )
    script = _write(
        tmp_path / "main.py",
        """
        import torch
        import engine
        model = torch.nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), 0.1)
        engine.train(model, opt, [], "cuda")
        """,
    )
    (f,) = _xla109(script)
    assert "(in engine.py:2)" in f.message and "`engine.train(" in f.message


def test_the_trainer_file_names_the_caller_whose_optimizer_its_move_makes_stale(tmp_path: Path):
    trainer = _write(tmp_path / "trainer.py", TRAINER_KWARGS)
    _write(
        tmp_path / "run.py",
        """
        import torch
        from trainer import Trainer
        def main(args):
            model = torch.nn.Linear(4, 2)
            optimizer = torch.optim.Adam(model.parameters(), 1e-3)
            Trainer(model=model, optimizer=optimizer, args=args)
        """,
    )
    (f,) = _xla109(trainer)
    assert f.span.start.line == 5 and f.fix is None
    assert "moves the model `Trainer()` is handed" in f.message and "(run.py:5)" in f.message
    assert "line 5 there" in f.manual


def test_the_trainer_file_is_quiet_when_its_callers_move_first(tmp_path: Path):
    trainer = _write(tmp_path / "trainer.py", TRAINER_KWARGS)
    _write(
        tmp_path / "run.py",
        """
        import torch
        from trainer import Trainer
        def main(args):
            model = torch.nn.Linear(4, 2).to(args.device)
            optimizer = torch.optim.Adam(model.parameters(), 1e-3)
            Trainer(model=model, optimizer=optimizer, args=args)
        """,
    )
    assert _xla109(trainer) == []
