"""XLA118 through an attribute whose class only the constructor's annotation names (held-out
57's YOLOX trainer: ``__init__(self, exp: Exp)``, ``self.exp = exp``, then
``self.exp.random_resize(...)`` running ``torch.LongTensor(2).cuda()`` in yolox_base.py)."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.rules import xla118_workspace_helper as rule
from xla_lens.semantic import workspace, workspace_calls, workspace_classes

from tests.helpers import src

EXP = """
import torch

class Exp:
    def random_resize(self, size):
        tensor = torch.LongTensor(2).cuda()
        tensor[0] = size
        return tensor

    def describe(self):
        return "exp"
"""

TRAINER = """
from exp_base import Exp

class Trainer:
    def __init__(self, exp: {annotation}, args):
        self.exp = exp
        self.args = args

    def step(self, size):
        self.exp.describe()
        return self.exp.random_resize(size)
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    rule.clear_cache()
    workspace_calls.clear_cache()
    workspace.clear_cache()
    workspace_classes.clear_cache()
    yield


@pytest.mark.parametrize("annotation", ["Exp", '"Exp"'])
def test_a_method_of_the_annotated_class_is_named_at_the_call(tmp_path: Path, annotation):
    (tmp_path / "exp_base.py").write_text(src(EXP), encoding="utf-8")
    script = tmp_path / "trainer.py"
    script.write_text(src(TRAINER.format(annotation=annotation)), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    (f,) = [f for f in result.findings if f.code == "XLA118"]
    assert f.span.start.line == 9 and "Exp.random_resize" in f.message and "line 5" in f.message


def test_an_unannotated_parameter_stays_unknown(tmp_path: Path):
    (tmp_path / "exp_base.py").write_text(src(EXP), encoding="utf-8")
    script = tmp_path / "trainer.py"
    script.write_text(src(TRAINER.format(annotation="Exp").replace("exp: Exp", "exp")))
    result = analyze(script.read_text(), str(script))
    assert [f for f in result.findings if f.code == "XLA118"] == []
