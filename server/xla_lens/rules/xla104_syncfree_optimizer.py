"""XLA104: a torch.optim optimizer in an AMP script, where the sync-free one belongs.

The sync-free optimizers take the scaler's ``found_inf`` as a device tensor, so skipping a
step with inf gradients needs no host read. The fix swaps only the class name, so the
arguments stay exactly as written.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.frameworks import ownership
from ..semantic.model import Emitter, ScriptModel
from ..semantic.precision import float16_uses
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity

CODE = "XLA104"
SYNCFREE = "torch_xla.amp.syncfree"
CLASSES = {f"torch.optim.{c}": c for c in ("SGD", "Adam", "AdamW")}
# The guide's torch_xla 1.13 syncfree classes define their own __init__ without the
# CUDA-kernel switches that later torch.optim added (torch_xla 2.x subclasses torch.optim).
LEGACY_UNSUPPORTED = {"foreach", "fused", "capturable", "differentiable"}


def _legacy_blocker(call: ast.Call) -> str | None:
    for kw in call.keywords:
        if kw.arg is None:
            return "**kwargs"
        if kw.arg in LEGACY_UNSUPPORTED:
            return f"{kw.arg}="
    return None


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    # accelerate/Lightning wrap the optimizer and run the scaler themselves.
    if not model.uses_amp or ownership(model).framework is not None:
        return
    # Modern target: with bf16 the scaler goes (XLA103) and a sync-free optimizer buys
    # nothing; it matters only where loss scaling stays (float16 left in the script).
    if ctx.target == "modern" and not (model.uses_grad_scaler and float16_uses(model)):
        return
    for call in model.calls:
        cls = CLASSES.get(model.call_name(call) or "")
        if cls is None:
            continue
        message = (
            f"torch.optim.{cls} in an AMP script: with the sync-free {SYNCFREE}.{cls} a loss "
            "scaler skips inf/NaN steps on the device instead of reading the host every step"
        )
        blocker = _legacy_blocker(call) if ctx.target == "legacy" else None
        if blocker is not None:
            yield Finding(
                CODE,
                message,
                model.span(call),
                Severity.INFORMATION,
                manual=f"The legacy {SYNCFREE}.{cls} does not take {blocker}: remove it, "
                f"then use `from {SYNCFREE} import {cls}`",
            )
            continue
        e = Emitter(model)
        name = e.name_from(SYNCFREE, cls)
        fix = Fix(f"Use {SYNCFREE}.{cls}", (Replace(model.span(call.func), name), *e.imports))
        yield Finding(CODE, message, model.span(call), Severity.INFORMATION, fix=fix)


HOVER = """\
**XLA104 · sync-free optimizer with AMP**

With AMP, a `torch.optim` optimizer makes the scaler read `found_inf` on the host every step
(an XLA graph break). The sync-free versions take it as a device tensor.

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `from torch_xla.amp.syncfree import SGD, Adam, AdamW` |
| legacy (1.13, SageMaker Training Compiler) | `from torch_xla.amp.syncfree import SGD, Adam, AdamW` |

Fix: only the class is replaced; the arguments are kept. On the modern target it is
reported only where loss scaling stays (float16 left in the script, XLA103): with bfloat16
the scaler is removed and the sync-free class buys nothing. (The guide's
`import torch_xla.amp.syncfree.Adam as adam` is not valid Python: `Adam` is a class.)
"""

RULE = Rule(
    code=CODE,
    name="syncfree-optimizer",
    category=Category.CONVERSION,
    summary="torch.optim.SGD/Adam/AdamW in an AMP script → torch_xla.amp.syncfree.SGD/Adam/AdamW",
    severity=Severity.INFORMATION,
    check=check,
    has_fix=True,
    hover={q: HOVER for q in CLASSES},
)
