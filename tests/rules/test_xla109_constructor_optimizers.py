"""XLA109 on a class that builds its optimizer in ``__init__`` from a submodule's parameters,
moved to the device after it is built: MAML-Pytorch's ``Meta`` (meta.py: ``self.meta_optim =
optim.Adam(self.net.parameters())``) and the script's ``Meta(args, config).to(device)``
(held-out 74). XLA101's device fix would turn the crash into a model that never trains, so it
waits for review."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_callers, workspace_calls, workspace_classes

from tests.helpers import findings, src

META = """
import torch
from torch import nn, optim


class Meta(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self.net = nn.Linear(4, 2)
        self.meta_optim = optim.Adam(self.net.parameters(), lr=lr)
"""

SCRIPT = """
import torch
from meta import Meta

device = torch.device("cuda")
maml = Meta(1e-3).to(device)
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    for module in (workspace_calls, workspace, workspace_classes, workspace_callers):
        module.clear_cache()
    yield
    for module in (workspace_calls, workspace, workspace_classes, workspace_callers):
        module.clear_cache()


def _analyze(tmp_path: Path):
    (tmp_path / "meta.py").write_text(src(META), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(src(SCRIPT), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return result.findings


def test_a_workspace_class_building_its_optimizer_in_init_is_reported_at_the_move(tmp_path):
    found = _analyze(tmp_path)
    (stale,) = [f for f in found if f.code == "XLA109"]
    assert stale.span.start.line == 4 and stale.fix is None
    assert stale.message.startswith(
        "`Meta.__init__` (meta.py line 9) builds its optimizer from `self.net.parameters()` "
        "before `Meta(1e-3).to(device)` moves the instance"
    )
    (device,) = [f for f in found if f.code == "XLA101"]
    assert device.fix is not None and not device.fix.safe
    assert (
        "`Meta.__init__` (meta.py line 9) builds its optimizer from `self.net.parameters()`"
        in device.fix.review_reason
    )


def test_the_same_class_in_the_script_is_reported_too():
    code = META + "\n\ndevice = torch.device('cuda')\nmaml = Meta(1e-3).to(device)\n"
    (stale,) = findings(code, "XLA109")
    assert stale.message.startswith("`Meta.__init__` builds its optimizer from `self.parameters()`")
    (device,) = findings(code, "XLA101")
    assert not device.fix.safe


def test_the_binding_that_reaches_the_move_names_the_class(tmp_path):
    # GraphSAINT (held-out 123): ``model = GraphSAINT(...)`` then ``model = model.cuda()`` in
    # prepare(), while train() binds its own ``model`` from the tuple prepare() returns.
    (tmp_path / "meta.py").write_text(src(META), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(
        src("""
        import torch
        from meta import Meta


        def prepare(use_gpu):
            model = Meta(1e-3)
            if use_gpu:
                model = model.cuda()
            return model, 1


        def train():
            model, steps = prepare(True)
            return model
        """),
        encoding="utf-8",
    )
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    (stale,) = [f for f in result.findings if f.code == "XLA109"]
    assert stale.span.start.line == 7 and "`Meta.__init__` (meta.py line 9)" in stale.message
    (device,) = [f for f in result.findings if f.code == "XLA101"]
    assert device.fix is not None and not device.fix.safe
