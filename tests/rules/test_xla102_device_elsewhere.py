"""XLA102/XLA103 in a module whose device is chosen by a caller in another file (a Trainer
class given ``args.device``): rewriting the CUDA autocast to XLA and dropping the scaler is
right only when that caller runs the class on the XLA device."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic.workspace import clear_cache
from xla_lens.semantic.workspace_callers import clear_cache as clear_callers

from tests.helpers import findings, src

TRAINER = """
import torch
from torch.cuda.amp import GradScaler, autocast


class Trainer:
    def __init__(self, model, optimizer, args):
        self.args = args
        self.model = model.to(args.device)
        self.optimizer = optimizer

    def fit(self, loader):
        scaler = GradScaler(enabled=self.args.fp16)
        for x, y in loader:
            x, y = x.to(self.args.device), y.to(self.args.device)
            with autocast(enabled=self.args.fp16):
                loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(self.optimizer)
            scaler.update()
"""

CUDA_CALLER = """
import torch
from trainer import Trainer

args.device = torch.device("cuda")
Trainer(model, opt, args).fit(loader)
"""

XLA_CALLER = """
import torch_xla
from trainer import Trainer

args.device = torch_xla.device()
Trainer(model, opt, args).fit(loader)
"""


def _check(tmp_path: Path, caller: str | None, target: str = "modern") -> dict[str, object]:
    clear_cache()
    clear_callers()
    trainer = tmp_path / "trainer.py"
    trainer.write_text(src(TRAINER))
    if caller is not None:
        (tmp_path / "main.py").write_text(src(caller))
    result = analyze(trainer.read_text(), str(trainer), target=target)
    assert not result.rule_errors, result.rule_errors
    return {f.code: f for f in result.findings if f.code in {"XLA102", "XLA103"}}


@pytest.mark.parametrize("target", ["modern", "legacy"])
def test_a_caller_that_keeps_cuda_makes_both_fixes_for_review(tmp_path: Path, target: str):
    found = _check(tmp_path, CUDA_CALLER, target)
    for code in ("XLA102", "XLA103"):
        fix = found[code].fix
        assert fix is not None and not fix.safe, code
        assert "args.device" in fix.review_reason and "main.py:5" in fix.review_reason


def test_no_caller_in_reach_makes_both_fixes_for_review(tmp_path: Path):
    found = _check(tmp_path, None)
    for code in ("XLA102", "XLA103"):
        fix = found[code].fix
        assert fix is not None and not fix.safe, code
        assert "args.device" in fix.review_reason and "no caller" in fix.review_reason


def test_a_caller_on_the_xla_device_keeps_both_fixes_safe(tmp_path: Path):
    found = _check(tmp_path, XLA_CALLER)
    assert found["XLA102"].fix.safe and found["XLA103"].fix.safe


def test_a_script_that_picks_its_device_itself_keeps_both_fixes_safe():
    code = TRAINER + 'Trainer(model, opt, args).fit(loader)\nargs.device = "cuda"\n'
    by_code = {f.code: f for f in findings(code) if f.code in {"XLA102", "XLA103"}}
    assert by_code["XLA102"].fix.safe and by_code["XLA103"].fix.safe


def test_a_class_called_in_its_own_file_keeps_both_fixes_safe():
    code = TRAINER + "Trainer(model, opt, args).fit(loader)\n"
    by_code = {f.code: f for f in findings(code) if f.code in {"XLA102", "XLA103"}}
    assert by_code["XLA102"].fix.safe and by_code["XLA103"].fix.safe


BASE_PICKER = """
import torch


class ExpBase:
    def __init__(self, args):
        self.args = args
        self.device = self._device()
        self.model = self._build().to(self.device)

    def _device(self):
        if self.args.use_gpu:
            return torch.device("cuda:0")
        return torch.device("cpu")
"""

SUBCLASS = """
import torch
from exp_base import ExpBase


class Exp(ExpBase):
    def __init__(self, args):
        super(Exp, self).__init__(args)

    def _build(self):
        return torch.nn.Linear(4, 1)

    def fit(self, loader):
        scaler = torch.cuda.amp.GradScaler()
        for x, y in loader:
            x, y = x.to(self.device), y.to(self.device)
            with torch.cuda.amp.autocast():
                loss = torch.nn.functional.mse_loss(self.model(x), y)
            scaler.scale(loss).backward()
            scaler.step(self.opt)
            scaler.update()
"""


@pytest.mark.parametrize("converted", [False, True])
def test_a_device_set_by_a_workspace_base_class_is_named_as_such(tmp_path: Path, converted: bool):
    # Informer2020's Exp_Basic.__init__ picks self.device in another file (held-out 39): the
    # review reason names that base, not "a caller"; once the base picks XLA, it is known.
    clear_cache()
    clear_callers()
    base = BASE_PICKER
    if converted:
        base = base.replace('torch.device("cuda:0")', "torch_xla.device()")
        base = "import torch_xla\n" + base.replace('torch.device("cpu")', "torch_xla.device()")
    (tmp_path / "exp_base.py").write_text(src(base))
    script = tmp_path / "exp.py"
    script.write_text(src(SUBCLASS))
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors, result.rule_errors
    found = {f.code: f for f in result.findings}
    for code in ("XLA102", "XLA103"):
        fix = found[code].fix
        if converted:
            assert fix.safe, (code, fix.review_reason)
        else:
            assert not fix.safe
            assert "set by ExpBase.__init__ in exp_base.py (line 7)" in fix.review_reason
            assert "caller" not in fix.review_reason
    # XLA118: super().__init__ runs the base's picker (none once the base is converted).
    helper = [f for f in result.findings if f.code == "XLA118"]
    if converted:
        assert helper == []
    else:
        (one,) = helper
        assert one.span.start.line == 6
        assert one.message.startswith("super().__init__() (ExpBase.__init__) runs code in")
        assert "line 12:" in one.message and "(XLA101)" in one.message


def test_a_base_class_out_of_reach_is_named_as_the_likely_setter(tmp_path: Path):
    # Informer copied alone (held-out 166): ``exp.exp_basic`` is not beside the script, so
    # the base that sets self.device cannot be read; the reason names it before any caller.
    clear_cache()
    clear_callers()
    script = tmp_path / "exp.py"
    script.write_text(src(SUBCLASS).replace("from exp_base import", "from exp.exp_base import"))
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors, result.rule_errors
    fix = next(f for f in result.findings if f.code == "XLA102").fix
    assert not fix.safe
    assert "set by Exp's base class `ExpBase`, whose module is not found" in fix.review_reason
