"""XLA109 on parameter groups a model's own method collects before the move: TSM's
``policies = model.get_optim_policies()`` (a list of dicts of the Parameters of that moment),
then ``nn.DataParallel(model).cuda()``, then ``SGD(policies, ...)`` (held-out 120). The list keeps
the CPU Parameters the move replaces on XLA, so the optimizer never changes the model."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_callers, workspace_calls, workspace_classes

from tests.helpers import findings, fixed, src

TSN = """
import torch
from torch import nn


class TSN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4, 2)

    def get_optim_policies(self):
        weights = []
        biases = []
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                ps = list(m.parameters())
                weights.append(ps[0])
                biases += ps[1:]
        return [
            {"params": weights, "lr_mult": 1, "name": "weight"},
            {"params": biases, "lr_mult": 2, "name": "bias"},
        ]
"""

MAIN = """
model = TSN()
policies = model.get_optim_policies()
model = torch.nn.DataParallel(model).cuda()
optimizer = torch.optim.SGD(policies, 0.1, momentum=0.9)
"""


def test_parameter_groups_taken_before_the_move_are_stale():
    code = src(TSN) + "\n\n" + src(MAIN)
    (stale,) = findings(code, "XLA109")
    assert stale.message.startswith(
        "optimizer built from `model` parameters taken on line 26 before "
        "`torch.nn.DataParallel(model).cuda()` (line 27) moves it"
    )
    assert stale.fix is None or not stale.fix.safe


def test_groups_taken_after_the_move_are_fine():
    main = src(MAIN).splitlines()
    code = src(TSN) + "\n\n" + "\n".join([main[0], main[2], main[1], main[3]]) + "\n"
    assert findings(code, "XLA109") == []


@pytest.mark.parametrize(
    "body",
    [
        "return self.parameters()",  # a generator, read when the optimizer iterates it
        "return [{'params': self.fc.weight}] if self.training else None",  # not always a list
        "return [1, 2]",  # reads no Parameter
    ],
)
def test_a_method_that_does_not_return_a_parameter_list_is_not_a_capture(body):
    tsn = src(TSN)
    start = tsn.index("        weights = []")
    code = tsn[:start] + f"        {body}\n" + "\n\n" + src(MAIN)
    assert findings(code, "XLA109") == []


@pytest.fixture
def _fresh_caches():
    for module in (workspace_calls, workspace, workspace_classes, workspace_callers):
        module.clear_cache()
    yield
    for module in (workspace_calls, workspace, workspace_classes, workspace_callers):
        module.clear_cache()


@pytest.mark.usefixtures("_fresh_caches")
def test_the_models_class_in_another_module_is_read(tmp_path: Path):
    (tmp_path / "models.py").write_text(src(TSN), encoding="utf-8")
    script = tmp_path / "main.py"
    script.write_text("import torch\nfrom models import TSN\n\n" + src(MAIN), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    (stale,) = [f for f in result.findings if f.code == "XLA109"]
    assert "taken on line 5" in stale.message


def test_a_plain_move_goes_above_the_statement_that_takes_the_groups():
    code = (
        src(TSN) + "\n\n" + src(MAIN).replace("torch.nn.DataParallel(model).cuda()", "model.cuda()")
    )
    (stale,) = findings(code, "XLA109")
    assert stale.fix is not None and stale.fix.safe
    assert fixed(code, "XLA109").endswith(
        "model = TSN()\nmodel = model.cuda()\npolicies = model.get_optim_policies()\n"
        "optimizer = torch.optim.SGD(policies, 0.1, momentum=0.9)\n"
    )
