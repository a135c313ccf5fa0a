"""``def _mp_fn(rank, cfg, xm)``: the caller imports torch_xla's xla_model and hands it in
(held-out 150's deeptrane). A parameter named ``xm`` that the script never binds otherwise,
used as ``xm.xla_device()`` or ``xm.optimizer_step(...)``, is that module: the script is
already on XLA and its ``optimizer_step(barrier=True)`` marks the step."""

import ast

from xla_lens.semantic.model import ScriptModel

from tests.helpers import findings, src

HANDED = src("""
import torch


def train_fn(model, loader, optimizer, xm):
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer, barrier=True)


def _mp_fn(rank, cfg, xm):
    device = xm.xla_device()
    model = torch.nn.Linear(4, 4).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_fn(model, cfg.loader, optimizer, xm)
""")


def _model(code: str) -> ScriptModel:
    return ScriptModel(code, ast.parse(code), "<t>")


def test_a_handed_xm_is_torch_xla_xla_model():
    model = _model(HANDED)
    names = {model.call_name(c) for c in model.calls}
    assert "torch_xla.core.xla_model.optimizer_step" in names
    assert "torch_xla.core.xla_model.xla_device" in names
    assert not findings(HANDED, "XLA107")
    assert not findings(HANDED, "XLA105")


def test_a_parameter_xm_used_as_a_number_stays_unknown():
    code = "def spread(xm, xs):\n    return (xs - xm.mean()).abs()\n"
    model = _model(code)
    assert {model.call_name(c) for c in model.calls} == {None}


def test_an_imported_or_assigned_xm_keeps_its_binding():
    code = "import numpy as xm\n\n\ndef f(xm):\n    return xm.mark_step()\n"
    model = _model(code)
    assert {model.call_name(c) for c in model.calls} == {"numpy.mark_step"}


def test_a_handed_xm_makes_the_script_hand_written_xla():
    """The float16 the author chose for stored scores is a dtype policy of an XLA script, not a
    conversion site (XLA114 leaves hand-written XLA scripts alone)."""
    code = HANDED.replace(
        "    train_fn(model, cfg.loader, optimizer, xm)\n",
        "    train_fn(model, cfg.loader, optimizer, xm)\n"
        "    scores = model(cfg.x).detach().to(torch.float16)\n",
    )
    assert not findings(code, "XLA114")
    plain = code.replace("xm.xla_device()", "torch.device('cuda')").replace(
        "xm.optimizer_step(optimizer, barrier=True)", "optimizer.step()"
    )
    assert findings(plain, "XLA114")
