"""XLA206: ``ReduceOp.AVG`` in a collective that runs on the "xla" process group.

torch_xla's process-group backend knows SUM, PRODUCT, MIN, MAX, BAND and BOR only
(``xla_backend._get_reduce_type``): ``dist.all_reduce(t, op=dist.ReduceOp.AVG)`` raises
``ValueError: Invalid reduce op`` on it (torch_xla 2.9, verified). A converted script's group
is "xla" (XLA205), so an average that NCCL computed now stops the run at its first step.
The same average is a SUM followed by a division by the group's size.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.device_intent import being_converted
from ..semantic.model import ScriptModel
from ..semantic.node_helpers import dotted, keyword
from .base import Category, Finding, Fix, InsertAfter, Replace, Rule, RuleContext, Severity

CODE = "XLA206"
AVG = "torch.distributed.ReduceOp.AVG"
# Collective -> the positional index of its ``op`` argument.
COLLECTIVES = {
    "torch.distributed.all_reduce": 1,
    "torch.distributed.reduce": 2,
    "torch.distributed.reduce_scatter_tensor": 2,
}
REVIEW = (
    "the division assumes a floating-point tensor: `/=` on an integer tensor raises (NCCL's "
    "AVG divides integers too), so check the tensor's dtype"
)


def _op(call: ast.Call, index: int) -> ast.expr | None:
    kw = keyword(call, "op")
    if kw is not None:
        return kw.value
    return call.args[index] if len(call.args) > index else None


def _fix(model: ScriptModel, call: ast.Call, op: ast.expr) -> Fix | None:
    """SUM, then the tensor divided by the group's size in place, for the plain statement
    form ``dist.all_reduce(t, op=AVG)`` (the result lands in ``t``); anything else (async
    work handles, reduce onto one rank, a tensor expression with effects) is left by hand."""
    stmt = model.parent(call)
    if model.call_name(call) != "torch.distributed.all_reduce" or not isinstance(stmt, ast.Expr):
        return None
    if keyword(call, "async_op") is not None or len(call.args) > 3 or not call.args:
        return None
    tensor = call.args[0] if call.args else None
    if tensor is None or dotted(tensor) is None:
        return None
    op_text = model.segment(op)
    dist = model.segment(call.func)
    if not (op_text.endswith(".AVG") and dist.endswith(".all_reduce")):
        return None
    group = keyword(call, "group")
    group_arg = call.args[2] if len(call.args) > 2 else group.value if group else None
    size = f"{dist[: -len('.all_reduce')]}.get_world_size({model.segment(group_arg) if group_arg else ''})"
    ops = (
        Replace(model.span(op), op_text[: -len("AVG")] + "SUM"),
        InsertAfter(model.span(stmt), f"{model.segment(tensor)} /= {size}"),
    )
    return Fix("Sum, then divide by the world size", ops, safe=False, review_reason=REVIEW)


def _imports_torch_xla(model: ScriptModel) -> bool:
    return any(t.split(".")[0] == "torch_xla" for t in model.imports.values())


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    calls = [c for name in COLLECTIVES for c in model.calls_to(name)]
    if not calls or not (being_converted(model) or _imports_torch_xla(model)):
        return  # a CPU (gloo) script keeps its AVG
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        op = _op(call, COLLECTIVES[model.call_name(call) or ""])
        if op is None or model.qualname(op) != AVG:
            continue
        fix = _fix(model, call, op)
        message = (
            'ReduceOp.AVG is not supported by the "xla" process group: torch_xla raises '
            "ValueError('Invalid reduce op') here"
        )
        yield Finding(
            CODE,
            message if fix is None else f"{message} (fix needs review: {REVIEW})",
            model.span(call),
            Severity.WARNING,
            fix=fix,
            manual=None
            if fix is not None
            else "reduce with ReduceOp.SUM and divide the result by dist.get_world_size()",
        )


HOVER = """\
**XLA206 · ReduceOp.AVG on the xla backend**

torch_xla's process group supports SUM, PRODUCT, MIN, MAX, BAND and BOR; `AVG` raises
`ValueError: Invalid reduce op`. Average by hand:

```python
dist.all_reduce(t, op=dist.ReduceOp.SUM)
t /= dist.get_world_size()
```
"""

RULE = Rule(
    code=CODE,
    name="reduce-avg",
    category=Category.DISTRIBUTED,
    summary="dist.all_reduce(t, op=ReduceOp.AVG) raises on the xla backend → SUM, then "
    "t /= dist.get_world_size()",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={AVG: HOVER},
)
