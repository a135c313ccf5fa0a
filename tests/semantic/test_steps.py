"""Training-step discovery: step functions, methods, epoch functions, gradient accumulation,
compiled steps, loaders the loop cannot see, and step functions in sibling modules."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from xla_lens.engine import analyze
from xla_lens.semantic.loaders import Source, loop_source
from xla_lens.semantic.model import ScriptModel
from xla_lens.semantic.workspace import clear_cache

from tests.helpers import findings, src


def model_of(code: str, path: str = "<script>") -> ScriptModel:
    text = src(code)
    return ScriptModel(text, ast.parse(text), path)


def loop_lines(model: ScriptModel) -> list[int]:
    return [loop.node.lineno for loop in model.training_loops]


def test_a_method_called_through_self_is_a_step_function():
    m = model_of(
        """
        class Trainer:
            def _run_batch(self, x):
                self.optimizer.zero_grad()
                self.model(x).sum().backward()
                self.optimizer.step()

            def _run_epoch(self, loader):
                for x in loader:
                    self._run_batch(x)

            def train(self, epochs):
                for epoch in range(epochs):
                    self._run_epoch(self.loader)
        """
    )
    # The batch loop is the training-step loop; the epoch loop around it is not.
    assert loop_lines(m) == [8]
    (loop,) = m.training_loops
    assert [fn.name for fn in loop.step_functions] == ["_run_batch"]


def test_methods_of_other_classes_with_the_same_name_are_not_confused():
    m = model_of(
        """
        class Evaluator:
            def step(self, x):
                return x

        class Trainer:
            def step(self, x):
                self.model(x).sum().backward()
                self.optimizer.step()

            def fit(self, loader):
                for x in loader:
                    self.step(x)

        class Runner:
            def go(self, loader):
                for x in loader:
                    self.step(x)
        """
    )
    assert loop_lines(m) == [11]


def test_gradient_accumulation_loop_is_part_of_the_enclosing_step():
    code = """
    import torch
    for step in range(max_steps):
        optimizer.zero_grad()
        for micro in range(accum):
            x, y = loader.next_batch()
            loss = model(x, y)
            loss.backward()
        optimizer.step()
    """
    m = model_of(code)
    assert loop_lines(m) == [2]
    (f,) = findings(code, "XLA107")
    assert f.span.start.line == 1  # the outer loop: one sync per optimizer step
    # A step function with the same accumulation inside is still a step function.
    m = model_of(
        """
        def train_step(batches):
            for b in batches:
                model(b).sum().backward()
            optimizer.step()

        for batches in loader:
            train_step(batches)
        """
    )
    assert loop_lines(m) == [6]


def test_compiled_step_syncs_by_itself():
    code = """
    import torch_xla

    @torch_xla.compile(full_graph=True)
    def train_step(batch):
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
        return loss

    for step in range(steps):
        batch = next(it)
        train_step(batch)
    """
    assert findings(code, "XLA107") == []


def test_loop_source_follows_next_iter_and_attributes():
    m = model_of(
        """
        import torch_xla.distributed.parallel_loader as pl
        from torch.utils.data import DataLoader

        class Loop:
            def __init__(self, loader):
                self.it = iter(pl.MpDeviceLoader(loader, device))

            def run(self):
                for step in range(10):
                    batch = next(self.it)
                    model(batch).sum().backward()
                    opt.step()

        def plain():
            it = iter(DataLoader(ds))
            while True:
                batch = next(it)
                model(batch).sum().backward()
                opt.step()
        """
    )
    sources = [loop_source(m, loop)[0] for loop in m.training_loops]
    assert sources == [Source.XLA, Source.PLAIN]


def test_already_xla_sub_step_loops_and_hidden_xla_loaders_get_no_sync_finding():
    sub_steps = """
    import torch_xla.core.xla_model as xm

    def make_step(G, D, config):
        def train(x, y):
            for d_step in range(config["num_D_steps"]):
                D(x).sum().backward()
                xm.optimizer_step(D.optim)
            G(x).sum().backward()
            xm.optimizer_step(G.optim)
        return train
    """
    assert findings(sub_steps, "XLA107") == []
    hidden = """
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.parallel_loader as pl

    class Runner:
        def __init__(self, dataloader):
            self.dataloader = iter(dataloader)

        def start(self):
            for step in range(100):
                batch = next(self.dataloader)
                self.model(batch).sum().backward()
                self.optimizer.step()
            xm.mark_step()

    Runner(pl.MpDeviceLoader(loader, device)).start()
    """
    assert findings(hidden, "XLA107") == []
    # The same loop in a CUDA script is still reported.
    cuda = hidden.replace("import torch_xla.core.xla_model as xm\n", "").replace(
        "import torch_xla.distributed.parallel_loader as pl\n", ""
    )
    cuda = cuda.replace("    xm.mark_step()\n", "").replace(
        "pl.MpDeviceLoader(loader, device)", "loader"
    )
    assert len(findings(cuda, "XLA107")) == 1


def _write(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    return path


def test_step_and_epoch_functions_in_sibling_modules(tmp_path: Path):
    clear_cache()
    _write(
        tmp_path,
        "engine.py",
        """
        import torch_xla

        def train_one_epoch(model, loader, optimizer):
            for x in loader:
                model(x).sum().backward()
                optimizer.step()

        def train_step(model, x, optimizer):
            model(x).sum().backward()
            optimizer.step()

        def synced_step(model, x, optimizer):
            train_step(model, x, optimizer)
            torch_xla.sync()
        """,
    )
    main = _write(
        tmp_path,
        "main.py",
        """
        from engine import train_one_epoch, train_step, synced_step

        for epoch in range(10):
            train_one_epoch(model, loader, optimizer)

        for x in loader:
            train_step(model, x, optimizer)

        for x in loader:
            synced_step(model, x, optimizer)
        """,
    )
    result = analyze(main.read_text(), str(main))
    sync = [f.span.start.line + 1 for f in result.findings if f.code == "XLA107"]
    # Only the loop around the sibling's per-step function that does not sync itself.
    assert sync == [6]
    # Relative imports inside a package resolve too.
    pkg = tmp_path / "pkg"
    _write(pkg, "__init__.py", "")
    _write(pkg, "steps.py", "def step(m, x, o):\n    m(x).sum().backward()\n    o.step()\n")
    runner = _write(pkg, "run.py", "from .steps import step\nfor x in loader:\n    step(m, x, o)\n")
    result = analyze(runner.read_text(), str(runner))
    assert [f.span.start.line + 1 for f in result.findings if f.code == "XLA107"] == [2]


def test_sibling_summaries_follow_edits_on_disk(tmp_path: Path):
    clear_cache()
    engine = _write(
        tmp_path, "engine.py", "def step(m, x, o):\n    m(x).sum().backward()\n    o.step()\n"
    )
    main = _write(
        tmp_path, "main.py", "from engine import step\nfor x in loader:\n    step(m, x, o)\n"
    )
    assert (
        len([f for f in analyze(main.read_text(), str(main)).findings if f.code == "XLA107"]) == 1
    )
    engine.write_text(engine.read_text() + "    import torch_xla\n    torch_xla.sync()\n# grown\n")
    assert [f for f in analyze(main.read_text(), str(main)).findings if f.code == "XLA107"] == []


def test_a_loop_over_a_literal_list_of_variants_belongs_to_the_enclosing_step_loop():
    m = model_of(
        """
        for i in range(steps):
            for dataset in ["CelebA", "RaFD"]:
                x = next(iters[dataset])
                model(x).sum().backward()
                optimizer.step()
        """
    )
    assert loop_lines(m) == [1]
    # A literal loop that is the outermost loop stays the training loop.
    m = model_of(
        """
        for lr in [0.1, 0.01]:
            model(x).sum().backward()
            optimizer.step()
        """
    )
    assert loop_lines(m) == [1]


def test_a_loop_over_an_abstract_step_method_runs_the_subclass_override():
    # Detectron2-style: the base class loops over ``self.run_step()`` and leaves it
    # abstract; the subclasses here run the step (Pointcept's trainer, held-out 149).
    code = """
        import abc
        import torch

        class TrainerBase:
            def train(self, start, end):
                for self.iter in range(start, end):
                    self.before_step()
                    self.run_step()

            def before_step(self):
                pass

            def run_step(self):
                raise NotImplementedError

        class SimpleTrainer(TrainerBase):
            def run_step(self):
                data = next(self._data_loader_iter)
                loss = self.model(data)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

        class AMPTrainer(SimpleTrainer):
            def run_step(self):
                '''AMP.'''
                loss = self.model(next(self._data_loader_iter))
                self.optimizer.step()
        """
    m = model_of(code)
    assert loop_lines(m) == [6]
    (loop,) = m.training_loops
    assert "run_step" in [fn.name for fn in loop.step_functions]
    got = {(f.code, f.span.start.line + 1) for f in findings(code)}
    assert ("XLA107", 6) in got
    assert ("XLA105", 22) in got


def test_an_abstract_method_with_no_override_here_stays_unresolved():
    m = model_of(
        """
        import abc

        class Base(abc.ABC):
            def train(self, loader):
                for x in loader:
                    self.run_step(x)

            @abc.abstractmethod
            def run_step(self, x):
                '''One step.'''
        """
    )
    assert loop_lines(m) == []


def test_a_step_method_called_with_its_step_switched_off_is_no_training_loop():
    # deep-supervised-hashing (held-out 161): the test loop calls the same `run_step` with
    # `train=False`, and every backward/step there sits under `if train:`.
    m = model_of(
        """
        class Trainer:
            def run_step(self, model, x, train: bool):
                loss = model(x).sum()
                if train:
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                return loss

            def train(self, model, loader, test_loader):
                for epoch in range(3):
                    for x in loader:
                        self.run_step(model, x, train=True)
                    for x in test_loader:
                        self.run_step(model, x, train=False)
        """
    )
    assert loop_lines(m) == [12]


def test_a_workspace_model_whose_forward_runs_the_step_makes_a_training_loop(tmp_path: Path):
    # PointFlow (held-out 162): `out = model(inputs, optimizer, step)` where the model class
    # of models/networks.py zeroes, backpropagates and steps inside `forward`; the model is
    # given back by `resume(path, model, optimizer)` in between.
    (tmp_path / "networks.py").write_text(
        src(
            """
            import torch.nn as nn

            class Flow(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.net = nn.Linear(3, 3)

                def forward(self, x, opt, step):
                    opt.zero_grad()
                    loss = self.net(x).pow(2).mean()
                    loss.backward()
                    opt.step()
                    return {"loss": loss.detach()}
            """
        )
    )
    script = tmp_path / "train.py"
    script.write_text(
        src(
            """
            import torch
            from networks import Flow
            from utils import resume

            def main(loader):
                model = Flow().cuda()
                optimizer = torch.optim.Adam(model.parameters())
                model, optimizer, start = resume("ckpt.pt", model, optimizer)
                for step, x in enumerate(loader):
                    out = model(x.cuda(), optimizer, step)
            """
        )
    )
    clear_cache()
    result = analyze(script.read_text(), str(script))
    assert any(f.code == "XLA107" and f.span.start.line + 1 == 9 for f in result.findings)
    plain = script.read_text().replace(
        "out = model(x.cuda(), optimizer, step)", "out = model(x.cuda())"
    )
    (tmp_path / "networks.py").write_text(
        (tmp_path / "networks.py")
        .read_text()
        .replace("def forward(self, x, opt, step):", "def forward(self, x):")
        .replace("        opt.zero_grad()\n", "")
        .replace("        loss.backward()\n", "")
        .replace("        opt.step()\n", "")
    )
    clear_cache()
    result = analyze(plain, str(script))
    assert not any(f.code == "XLA107" for f in result.findings)
