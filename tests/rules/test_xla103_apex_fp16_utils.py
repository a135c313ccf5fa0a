"""XLA103 on apex's older manual fp16 training (held-out 83, HigherHRNet's dist_train.py with
its vendored ``lib/fp16_utils``): ``network_to_half(model)`` and ``FP16_Optimizer(...)``.
FP16_Optimizer checks ``param.type()`` for ``torch.cuda.HalfTensor``/``FloatTensor`` and raises
TypeError for anything else; an XLA parameter's type is ``torch.xla.FloatTensor`` (checked
below on the installed torch_xla)."""

import os
import subprocess
import sys

from tests.helpers import findings, fixed, src

SCRIPT = src("""
import torch
import torch.nn as nn
from fp16_utils.fp16util import network_to_half
from fp16_utils.fp16_optimizer import FP16_Optimizer


def main(cfg, loader):
    model = nn.Linear(4, 2)
    if cfg.fp16:
        model = network_to_half(model)
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if cfg.fp16:
        optimizer = FP16_Optimizer(optimizer, static_loss_scale=128.0)
    for x, y in loader:
        loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
        optimizer.zero_grad()
        if cfg.fp16:
            optimizer.backward(loss)
        else:
            loss.backward()
        optimizer.step()
""")


def _apex(code: str) -> list:
    return [f for f in findings(code, "XLA103") if "fp16" in f.message]


def test_both_calls_are_reported_with_advice_and_no_fix():
    half, fp16_opt, _ = _apex(SCRIPT)
    assert "network_to_half() casts the model to float16" in half.message
    assert "raises TypeError" in fp16_opt.message
    assert 'torch.autocast("xla", dtype=torch.bfloat16)' in fp16_opt.message
    assert all(f.fix is None for f in (half, fp16_opt))
    assert "`optimizer.backward(loss)` (line 19) becomes `loss.backward()`" in fp16_opt.manual
    assert "FP16_Optimizer" in fixed(SCRIPT)


def test_the_apex_package_counts_and_unrelated_names_do_not():
    apex = SCRIPT.replace("from fp16_utils.fp16util import", "from apex.fp16_utils import")
    apex = apex.replace("from fp16_utils.fp16_optimizer import", "from apex.fp16_utils import")
    assert len(_apex(apex)) == 3
    own = SCRIPT.replace("from fp16_utils.fp16util import network_to_half\n", "").replace(
        "from fp16_utils.fp16_optimizer import FP16_Optimizer\n",
        "from mytools import network_to_half, FP16_Optimizer\n",
    )
    assert _apex(own) == []


def test_an_xla_parameter_is_not_a_cuda_tensor_type():
    # In a child process: torch_xla's runtime stays out of the test worker.
    code = (
        "import torch, torch_xla\n"
        "p = torch.nn.Parameter(torch.zeros(2, device=torch_xla.device()))\n"
        "print(p.type(), p.half().type())\n"
    )
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["torch.xla.FloatTensor", "torch.xla.HalfTensor"]


def test_the_backward_through_fp16_optimizer_is_a_site_of_its_own():
    # held-out 122 (DialoGPT): the constructor's advice named `optimizer.backward(loss)`, but
    # no finding sat on it, so the site a user must change was easy to miss.
    *_, backward = _apex(SCRIPT)
    assert backward.span.start.line == 18 and backward.fix is None
    assert "FP16_Optimizer's backward (line 14)" in backward.message
    assert "loss.backward()" in backward.manual
    plain = SCRIPT.replace("optimizer = FP16_Optimizer(optimizer, static_loss_scale=128.0)", "pass")
    assert [f for f in findings(plain, "XLA103") if "backward" in f.message] == []
