"""XLA119: ``fused=True`` on a torch.optim optimizer whose parameters live on the XLA device.

The fused optimizer kernels exist for CUDA, CPU, MPS, XPU, HPU and MTIA only. Measured on
torch 2.9.0 + torch_xla 2.9.0: ``torch.optim.AdamW(params, fused=True)`` with parameters on
the XLA device raises ``RuntimeError: `fused=True` requires all the params to be floating
point Tensors of supported devices`` when it is built, so a converted script stops before
its first step. Without ``fused`` the optimizer runs its default (for-each) implementation of
the same update, which XLA traces into the step graph anyway.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from ..semantic.model import ScriptModel, keyword
from ..semantic.precision import autocast_calls
from .base import (
    Category,
    Finding,
    Fix,
    RemoveKeyword,
    Rule,
    RuleContext,
    Severity,
)
from .parts.device_held import device_held

CODE = "XLA119"
FUSED_OPTIMIZERS = (
    "torch.optim.Adam",
    "torch.optim.AdamW",
    "torch.optim.SGD",
    "torch.optim.Adagrad",
    "torch.optim.adam.Adam",
    "torch.optim.adamw.AdamW",
    "torch.optim.sgd.SGD",
    "torch.optim.adagrad.Adagrad",
)
MESSAGE = (
    "{name}(fused=True) has no XLA kernel: with the parameters on the XLA device it raises "
    'RuntimeError ("`fused=True` requires ... Tensors of supported devices") when it is '
    "built; drop fused= (the default implementation computes the same update, and XLA fuses "
    "the step graph itself)"
)


def _fused_true(call: ast.Call) -> ast.keyword | None:
    found = keyword(call, "fused")
    if found is None:
        return None
    value = found.value
    return found if isinstance(value, ast.Constant) and value.value is True else None


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.calls_to(*FUSED_OPTIMIZERS):
        if _fused_true(call) is None:
            # fused=<expression>: build-nanogpt's `fused_available and device_type == "cuda"`
            # is already False on XLA; an unknown expression is not guessed at.
            continue
        name = (model.call_name(call) or "torch.optim").replace("torch.optim.", "", 1)
        span = model.span(call)
        fix = Fix("Drop fused=True", (RemoveKeyword(span, "fused"),))
        review = _review_reason(model, ctx)
        if review is not None:
            fix = replace(fix, safe=False, review_reason=review)
        yield Finding(CODE, MESSAGE.format(name=name), span, Severity.ERROR, fix=fix)


def _review_reason(model: ScriptModel, ctx: RuleContext) -> str | None:
    """Why dropping fused=True may change the numbers: the parameters stay on CUDA after
    Convert (the fused kernel would still run there), or they are kept in bfloat16/float16,
    where the fused kernel (fp32 math inside) and the default one round differently."""
    held = device_held(model, ctx.target)
    if held is not None:
        return f"{held}: on CUDA the fused kernel still runs and rounds differently"
    low = low_precision_weights(model)
    if low is not None:
        return (
            f"line {low.lineno} keeps tensors in {model.segment(low)[:40]}: in low precision "  # type: ignore[attr-defined]
            "the default optimizer rounds differently from the fused one (the update is the "
            "same in exact arithmetic)"
        )
    return None


LOW_PRECISION = {"torch.bfloat16", "torch.float16", "torch.half"}


def low_precision_weights(model: ScriptModel) -> ast.AST | None:
    """The first place the script may keep weights in bfloat16/float16 (``.half()``,
    ``.bfloat16()``, a low-precision dtype anywhere but an autocast's)."""
    in_autocast = {
        id(n)
        for call in autocast_calls(model)
        for kw in call.keywords
        if kw.arg == "dtype"
        for n in ast.walk(kw.value)
    }
    found: list[ast.AST] = [
        call for call in model.method_calls("half", "bfloat16") if not call.args
    ]
    found += [
        node
        for node in model.nodes_of(ast.Attribute)
        if id(node) not in in_autocast and model.qualname(node) in LOW_PRECISION
    ]
    return min(found, key=lambda n: (n.lineno, n.col_offset), default=None)  # type: ignore[attr-defined]


HOVER = """\
**XLA119 · fused optimizers have no XLA kernel**

`torch.optim.Adam/AdamW/SGD/Adagrad(..., fused=True)` run one CUDA (or CPU, MPS, XPU) kernel
per step. There is none for XLA: measured on torch 2.9.0 + torch_xla 2.9.0, building the
optimizer over parameters on the XLA device raises `RuntimeError: `fused=True` requires all
the params to be floating point Tensors of supported devices`.

Fix: drop `fused=True` (safe: the default implementation computes the same update; XLA
compiles the whole step, optimizer included, into one graph). `foreach=True` and
`capturable=True` work on XLA and are left alone.
"""

RULE = Rule(
    code=CODE,
    name="fused-optimizer",
    category=Category.CONVERSION,
    summary="torch.optim optimizer with fused=True → drop it (no fused kernel for XLA tensors)",
    severity=Severity.ERROR,
    check=check,
    has_fix=True,
    hover={f"{name}(fused=)": HOVER for name in FUSED_OPTIMIZERS},
)
