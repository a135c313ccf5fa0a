"""XLA404: Python control flow on tensor values inside the training loop (a sync per test)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.host_values import host_values
from ..semantic.model import ScriptModel
from ..semantic.tensors import loop_nodes
from .base import Category, Finding, Rule, RuleContext, Severity

CODE = "XLA404"
KINDS = {
    ast.If: "if",
    ast.While: "while",
    ast.Assert: "assert",
    ast.IfExp: "conditional expression",
}
MANUAL = (
    "Keep the decision on the device: `torch.where(cond, a, b)` instead of branching, or "
    "clamp/mask the value; for checks such as NaN detection decide in "
    "`xm.add_step_closure(fn, args=(loss,))`, which runs after the step's graph. If the "
    "branch really needs the value, read it once per step with `.item()` on purpose."
)


def _tests(model: ScriptModel) -> Iterator[tuple[str, ast.expr]]:
    for loop in model.training_loops:
        # A training ``while`` loop tests its condition every iteration too.
        if isinstance(loop.node, ast.While):
            yield "while", loop.node.test
    for _loop, node in loop_nodes(model):
        kind = KINDS.get(type(node))
        if kind is not None:
            yield kind, node.test  # type: ignore[attr-defined]


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    values = host_values(model)
    for kind, test in _tests(model):
        # Not a Python number, nor a CPU tensor of them (``losses = torch.zeros(n)`` filled
        # with ``.item()`` values): a pending device tensor.
        if not values.is_device(test):
            continue
        yield Finding(
            CODE,
            f"this {kind} tests a tensor: Python needs its value on the host, so XLA compiles "
            "and runs the pending graph here, every step",
            model.span(test),
            Severity.WARNING,
            manual=MANUAL,
        )


HOVER = """\
**XLA404 · control flow on tensors**

`if loss > 10:`, `while t.any():`, `assert torch.isfinite(loss)` and `a if t else b` turn a
lazy XLA tensor into a Python bool, which runs the pending graph mid-step.

Keep the decision on the device (`torch.where(cond, a, b)`, masks, `clamp`), or decide in a
step closure: `xm.add_step_closure(check_nan, args=(loss,))`. Counters such as
`step % 10 == 0` are plain ints and are fine. Same on the legacy and modern targets.
"""

RULE = Rule(
    code=CODE,
    name="tensor-control-flow",
    category=Category.PERFORMANCE,
    summary="if/while/assert on tensor values in the training loop → torch.where or a step closure",
    severity=Severity.WARNING,
    check=check,
    has_fix=False,
    hover={"torch.isnan": HOVER, "torch.isfinite": HOVER, ".any": HOVER, ".all": HOVER},
)
