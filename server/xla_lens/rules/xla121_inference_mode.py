"""XLA121: ``torch.inference_mode()`` around work on the XLA device.

Measured on torch 2.9.0 + torch_xla 2.9.0 (PJRT CPU): ``nn.Linear`` called on XLA tensors
under ``torch.inference_mode()`` raises ``RuntimeError: Cannot set version_counter for
inference tensor`` (elementwise ops pass, so a script fails at its first layer, typically in
validation or sampling after a whole training epoch). ``torch.no_grad()`` runs the same code.

The fix writes ``torch.no_grad()`` in its place (context manager or decorator, called or
bare). It is safe: inference mode is no-grad mode plus the promise that the results never
enter autograd later, so every computation that runs under it computes the same values under
no_grad; the only programs that see a difference ask about inference mode itself
(``torch.is_inference_mode_enabled()``, ``tensor.is_inference()``), and those get a fix for
review. ``inference_mode(False)`` and a mode given by an expression are left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from ..semantic.emitter import Emitter
from ..semantic.model import ScriptModel
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity

CODE = "XLA121"
INFERENCE_MODE = ("torch.inference_mode", "torch.autograd.grad_mode.inference_mode")
ASKS = ("torch.is_inference_mode_enabled",)
MESSAGE = (
    "torch.inference_mode() on the XLA device: nn.Linear and other layers raise "
    '"Cannot set version_counter for inference tensor" on XLA tensors (torch_xla 2.9); '
    "torch.no_grad() runs the same code"
)


def _enables(call: ast.Call) -> bool:
    """``inference_mode()`` / ``inference_mode(True)`` / ``mode=True``: it turns the mode on."""
    values = [*call.args, *(k.value for k in call.keywords if k.arg == "mode")]
    if len(values) > 1 or any(k.arg not in ("mode",) for k in call.keywords):
        return False
    if not values:
        return True
    return isinstance(values[0], ast.Constant) and values[0].value is True


def _uses(model: ScriptModel) -> Iterator[tuple[ast.expr, bool]]:
    """(node, called) of each ``torch.inference_mode()`` that enables the mode, and of the
    bare decorator ``@torch.inference_mode``."""
    for call in model.calls_to(*INFERENCE_MODE):
        if _enables(call):
            yield call, True
    for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
        for deco in fn.decorator_list:  # type: ignore[attr-defined]
            if not isinstance(deco, ast.Call) and model.qualname(deco) in INFERENCE_MODE:
                yield deco, False


def _review(model: ScriptModel) -> str | None:
    asks = next(model.calls_to(*ASKS), None)
    if asks is not None:
        return (
            f"line {asks.lineno} asks torch.is_inference_mode_enabled(), which is False under "
            "no_grad"
        )
    call = next(model.method_calls("is_inference"), None)
    if call is not None:
        return f"line {call.lineno} asks tensor.is_inference(), which is False under no_grad"
    return None


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    review = None
    for node, _called in _uses(model):
        if review is None:
            review = _review(model) or ""
        e = Emitter(model)
        code = f"{e.module('torch')}.no_grad()"
        fix = Fix(
            "Use torch.no_grad()",
            (Replace(model.span(node), code), *e.imports),
        )
        if review:
            fix = replace(fix, safe=False, review_reason=review)
        yield Finding(CODE, MESSAGE, model.span(node), Severity.ERROR, fix=fix)


HOVER = """\
**XLA121 · torch.inference_mode on XLA**

Layers such as `nn.Linear` raise `Cannot set version_counter for inference tensor` on XLA
tensors under `torch.inference_mode()` (torch_xla 2.9). Use `torch.no_grad()`.
"""

RULE = Rule(
    code=CODE,
    name="inference-mode",
    category=Category.CONVERSION,
    summary="torch.inference_mode() raises for layers on XLA tensors → torch.no_grad()",
    severity=Severity.ERROR,
    check=check,
    has_fix=True,
    hover={},
)
