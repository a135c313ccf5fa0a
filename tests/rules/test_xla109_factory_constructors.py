"""XLA109 through a factory and a constructor's own method: EfficientConformer (held-out 116)
builds its model with ``create_model(config).to(device)``, ``create_model`` (functions.py,
taken by ``from functions import *``) returns one of several classes by the config, and each
``__init__`` calls ``self.compile(...)``, a base-class method that builds
``optim.Adam(params=self.parameters())``. Before the move the script trained on the CPU; with
the device fix applied it moved the model to XLA and the optimizer kept the CPU Parameters
(measured: the weights never changed). So the finding must name the move and XLA101's device
fix must wait for review."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze, fix_source
from xla_lens.semantic import workspace, workspace_callers, workspace_calls, workspace_classes
from xla_lens.semantic.workspace_calls import parsed_module
from xla_lens.semantic.workspace_factories import _returned_classes

from tests.helpers import src

BASE = """
import torch
from torch import nn, optim


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def compile(self, params):
        if params["optimizer"] == "Adam":
            self.optimizer = optim.Adam(params=self.parameters(), lr=params["lr"])
        else:
            self.optimizer = optim.SGD(self.parameters(), lr=params["lr"])

    def fit(self, data, epochs):
        scaler = torch.cuda.amp.GradScaler()
        for epoch in range(epochs):
            for x, y in data:
                x, y = x.cuda(), y.cuda()
                with torch.cuda.amp.autocast():
                    loss = self(x).sum()
                scaler.scale(loss).backward()
                scaler.step(self.optimizer)
                scaler.update()
"""

CTC = """
from torch import nn
from models.base import Model


class ModelCTC(Model):
    def __init__(self, params):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.compile(params)


class InterCTC(ModelCTC):
    def __init__(self, params):
        super().__init__(params)
        self.inter = nn.Linear(2, 2)
        self.compile(params)
"""

FUNCTIONS = """
from models.ctc import ModelCTC, InterCTC


def create_model(config):
    if config["model_type"] == "CTC":
        model = ModelCTC(config)
    elif config["model_type"] == "InterCTC":
        model = InterCTC(config)
    else:
        raise Exception("Unknown model type")
    return model
"""

SCRIPT = """
import torch
from functions import *

config = {"model_type": "CTC", "optimizer": "Adam", "lr": 0.1}
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
model = create_model(config).to(device)
model.fit([], 1)
"""

PLAIN_BASE = """
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def compile(self, params):
        self.lr = params["lr"]
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    for module in (workspace_calls, workspace, workspace_classes, workspace_callers):
        module.clear_cache()
    yield
    for module in (workspace_calls, workspace, workspace_classes, workspace_callers):
        module.clear_cache()


def _project(tmp_path: Path, base: str = BASE) -> Path:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "models" / "base.py").write_text(src(base), encoding="utf-8")
    (tmp_path / "models" / "ctc.py").write_text(src(CTC), encoding="utf-8")
    (tmp_path / "functions.py").write_text(src(FUNCTIONS), encoding="utf-8")
    script = tmp_path / "main.py"
    script.write_text(src(SCRIPT), encoding="utf-8")
    return script


def _analyze(script: Path):
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return result.findings


def test_the_factory_move_is_reported_with_the_method_that_builds_the_optimizer(tmp_path):
    found = _analyze(_project(tmp_path))
    (stale,) = [f for f in found if f.code == "XLA109"]
    assert stale.span.start.line == 5 and stale.fix is None
    assert stale.message.startswith(
        "`ModelCTC.__init__` (through `self.compile()`, base.py line 11) builds its optimizer "
        "from `self.parameters()` before `create_model(config).to(device)` moves the instance "
        "to the device (so do `InterCTC`, which that call may build instead): on XLA"
    )


def test_the_device_fix_waits_for_review_and_fix_leaves_the_picker_alone(tmp_path):
    script = _project(tmp_path)
    found = _analyze(script)
    (device,) = [f for f in found if f.code == "XLA101" and f.span.start.line == 4]
    assert device.fix is not None and not device.fix.safe
    assert "through `self.compile()`" in device.fix.review_reason
    out = fix_source(script.read_text(), str(script))
    assert out.error is None
    assert 'torch.device("cuda:0" if torch.cuda.is_available() else "cpu")' in out.source


def test_a_method_of_the_factory_built_model_is_followed_into_its_module(tmp_path):
    found = _analyze(_project(tmp_path))
    (helper,) = [f for f in found if f.code == "XLA118" and f.span.start.line == 6]
    assert helper.message.startswith("model.fit() (Model.fit")
    assert "models/base.py" in helper.message


def test_no_finding_when_no_constructor_builds_an_optimizer(tmp_path):
    script = _project(tmp_path, base=PLAIN_BASE)
    found = _analyze(script)
    assert not [f for f in found if f.code == "XLA109"]
    (device,) = [f for f in found if f.code == "XLA101" and f.span.start.line == 4]
    assert device.fix is not None and device.fix.safe


@pytest.mark.parametrize(
    "body",
    [
        # Also bound by a loop: which class ends up returned is not the assignments' business.
        "model = A()\n    for model in ms:\n        pass\n    return model",
        # Rebound from something that is not a constructor.
        "model = A()\n    model = wrap(model)\n    return model",
        # A return of something else.
        "if k:\n        return A()\n    return None",
    ],
)
def test_a_factory_whose_returns_are_not_all_constructors_builds_nothing_known(tmp_path, body):
    (tmp_path / "classes.py").write_text("class A:\n    pass\n\n\nclass B:\n    pass\n")
    module = tmp_path / "factory.py"
    module.write_text(f"from classes import A, B\n\n\ndef make(k, ms):\n    {body}\n")
    parsed = parsed_module(module)
    assert parsed is not None
    assert _returned_classes(parsed, parsed.functions["make"]) == ()


def test_a_factory_returning_either_of_two_classes_builds_both(tmp_path):
    (tmp_path / "classes.py").write_text("class A:\n    pass\n\n\nclass B:\n    pass\n")
    module = tmp_path / "factory.py"
    module.write_text(
        "from classes import A, B\n\n\ndef make(k):\n"
        "    if k:\n        m = A()\n    else:\n        m = B()\n    return m\n"
    )
    parsed = parsed_module(module)
    assert parsed is not None
    assert [c.name for c in _returned_classes(parsed, parsed.functions["make"])] == ["A", "B"]


def test_a_factory_choosing_its_class_by_the_device_builds_nothing_known(tmp_path):
    # MLPerf UNet3D's get_trainer (held-out 110): XLATrainer or CUDATrainer by flags.device;
    # the CUDA trainer's code is not what an XLA run runs.
    (tmp_path / "classes.py").write_text("class A:\n    pass\n\n\nclass B:\n    pass\n")
    module = tmp_path / "factory.py"
    module.write_text(
        "from classes import A, B\n\n\ndef make(flags):\n"
        "    if flags.device == 'xla':\n        t = A()\n"
        "    elif flags.device == 'cuda':\n        t = B()\n"
        "    else:\n        raise ValueError(flags.device)\n    return t\n"
    )
    parsed = parsed_module(module)
    assert parsed is not None
    assert _returned_classes(parsed, parsed.functions["make"]) == ()
