"""XLA109 when the model moves as the submodule of a wrapper the script builds around it:
pytorch-ddpm's ``optim = Adam(net_model.parameters())`` then ``trainer =
GaussianDiffusionTrainer(net_model, ...).to(device)``, whose ``__init__`` keeps ``self.model =
model`` (held-out 118). ``nn.Module`` registers the kept module as a submodule, so the wrapper's
move moves ``net_model``; on XLA that makes new Parameters and the optimizer keeps the CPU ones.
Before this, XLA101's device fix was safe and the converted script never trained."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_callers, workspace_calls, workspace_classes
from xla_lens.semantic.holding_constructors import held_modules
from xla_lens.semantic.model import ScriptModel

from tests.helpers import findings, fixed, src

WRAPPER = """
import torch
from torch import nn


class DiffusionTrainer(nn.Module):
    def __init__(self, model, T):
        super().__init__()
        self.model = model
        self.T = T

    def forward(self, x):
        return self.model(x).sum()
"""

MOVED_AS_BUILT = """
device = torch.device("cuda:0")
net_model = nn.Linear(4, 4)
optim = torch.optim.Adam(net_model.parameters(), lr=0.1)
trainer = DiffusionTrainer(net_model, 10).to(device)
"""

MOVED_LATER = """
device = torch.device("cuda:0")
net_model = nn.Linear(4, 4)
optim = torch.optim.Adam(net_model.parameters(), lr=0.1)
trainer = DiffusionTrainer(net_model, T=10)
trainer.to(device)
"""


@pytest.mark.parametrize("script", [MOVED_AS_BUILT, MOVED_LATER])
def test_the_wrappers_move_is_a_move_of_the_kept_model(script):
    code = src(WRAPPER) + src(script)
    (stale,) = findings(code, "XLA109")
    assert stale.span.start.line == 14  # 0-based: the optimizer's line
    assert stale.message.startswith("optimizer built from `net_model` parameters before")
    (device,) = findings(code, "XLA101")
    assert device.fix is not None and not device.fix.safe
    assert 'torch.device("cuda:0")' in fixed(code)


@pytest.mark.parametrize(
    "kept",
    [
        "self.model = copy.deepcopy(model)",  # a copy: the original does not move
        "self.model = model\n        model = None",  # rebound: not provably the same object
    ],
)
def test_a_wrapper_that_does_not_keep_the_model_itself_moves_nothing_of_it(kept):
    code = "import copy\n" + src(WRAPPER).replace("self.model = model", kept) + src(MOVED_AS_BUILT)
    assert findings(code, "XLA109") == []


def test_a_plain_class_keeping_the_model_is_not_a_module():
    code = src(WRAPPER).replace("(nn.Module)", "").replace("        super().__init__()\n", "")
    code = code.replace(
        "def forward", "def to(self, device):\n        return self\n\n    def forward"
    )
    assert findings(code + src(MOVED_AS_BUILT), "XLA109") == []


@pytest.fixture
def _fresh_caches():
    for module in (workspace_calls, workspace, workspace_classes, workspace_callers):
        module.clear_cache()
    yield
    for module in (workspace_calls, workspace, workspace_classes, workspace_callers):
        module.clear_cache()


@pytest.mark.usefixtures("_fresh_caches")
def test_a_wrapper_class_of_another_module_is_read(tmp_path: Path):
    (tmp_path / "diffusion.py").write_text(src(WRAPPER), encoding="utf-8")
    script = tmp_path / "main.py"
    script.write_text(
        "import torch\nfrom torch import nn\nfrom diffusion import DiffusionTrainer\n\n"
        + src(MOVED_AS_BUILT),
        encoding="utf-8",
    )
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    (stale,) = [f for f in result.findings if f.code == "XLA109"]
    assert stale.span.start.line == 6


@pytest.mark.xla
def test_on_xla_the_wrappers_move_leaves_the_optimizer_on_the_old_parameters(tmp_path):
    code = src(WRAPPER) + src("""
    import torch_xla

    net_model = nn.Linear(4, 4)
    optim = torch.optim.SGD(net_model.parameters(), lr=0.1)
    trainer = DiffusionTrainer(net_model, 10).to(torch_xla.device())
    before = net_model.weight.detach().cpu().clone()
    for _ in range(3):
        optim.zero_grad()
        trainer(torch.ones(2, 4, device=torch_xla.device())).backward()
        optim.step()
        torch_xla.sync()
    print("same object:", optim.param_groups[0]["params"][0] is net_model.weight)
    print("changed:", not torch.equal(before, net_model.weight.detach().cpu()))
    """)
    script = tmp_path / "ddpm.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONWARNINGS": "ignore"}
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240
    )
    assert run.returncode == 0, run.stderr[-600:]
    assert "same object: False" in run.stdout and "changed: False" in run.stdout


@pytest.mark.usefixtures("_fresh_caches")
def test_the_arguments_of_a_move_chained_on_the_constructor_are_not_kept_modules(tmp_path: Path):
    # so-vits-svc (held-out 112): ``SynthesizerTrn(...).cuda(rank)``; ``rank`` is the move's.
    (tmp_path / "diffusion.py").write_text(src(WRAPPER), encoding="utf-8")
    script = tmp_path / "main.py"
    script.write_text(
        "import torch\nfrom diffusion import DiffusionTrainer\n\n"
        "def run(rank, net):\n"
        "    trainer = DiffusionTrainer(net, 10).cuda(rank)\n"
        "    optim = torch.optim.Adam(rank.parameters())\n"
        "    trainer.to(rank)\n",
        encoding="utf-8",
    )
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    assert [f for f in result.findings if f.code == "XLA109"] == []
    text = script.read_text()
    model = ScriptModel(text, ast.parse(text), str(script))
    (move,) = [c for c in model.calls if ast.unparse(c.func).endswith(".cuda")]
    assert held_modules(model, move) == []
    assert [ast.unparse(e) for e in held_modules(model, move.func.value)] == ["net"]
