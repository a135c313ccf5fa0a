"""XLA402: shapes that change from step to step (a smaller last batch, data-dependent ops)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.model import ScriptModel, keyword, method_name
from ..semantic.tensors import loop_nodes
from .base import Category, Finding, Fix, Rule, RuleContext, SetKeyword, Severity

CODE = "XLA402"
DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
# Data-dependent output shapes: (function, method) spellings.
DYNAMIC_FUNCTIONS = {
    "torch.nonzero": "nonzero",
    "torch.argwhere": "argwhere",
    "torch.masked_select": "masked_select",
    "torch.unique": "unique",
    "torch.unique_consecutive": "unique_consecutive",
}
DYNAMIC_METHODS = set(DYNAMIC_FUNCTIONS.values())
REVIEW_DROP_LAST = (
    "each epoch then skips the samples of the short last batch (up to batch_size - 1), so "
    "training sees different data; keep it when the dataset size is a multiple of the batch "
    "size, or pad the last batch instead"
)
MANUAL_OPS = (
    "Keep shapes fixed: use `torch.where(mask, x, 0)` or multiply by the mask instead of "
    "selecting elements, reduce with the mask (`(x * mask).sum() / mask.sum()`), or pad the "
    "result to a fixed size the graph can keep."
)


def _loader_calls(model: ScriptModel, expr: ast.AST, depth: int = 0) -> Iterator[ast.Call]:
    """The ``DataLoader(...)`` calls that feed ``expr``, through names and wrappers
    (``enumerate``, ``tqdm``, ``pl.MpDeviceLoader``, ``.per_device_loader``)."""
    if depth > 6:
        return
    if isinstance(expr, ast.Name):
        for value in model.assigned_from(expr.id):
            yield from _loader_calls(model, value, depth + 1)
    elif isinstance(expr, ast.Call):
        if model.call_name(expr) in DATALOADERS:
            yield expr
        elif method_name(expr) == "per_device_loader" and isinstance(expr.func, ast.Attribute):
            yield from _loader_calls(model, expr.func.value, depth + 1)
        elif expr.args:
            yield from _loader_calls(model, expr.args[0], depth + 1)


def _training_loaders(model: ScriptModel) -> list[ast.Call]:
    seen: dict[int, ast.Call] = {}
    for loop in model.training_loops:
        if isinstance(loop.node, ast.For | ast.AsyncFor):
            for call in _loader_calls(model, loop.node.iter):
                seen.setdefault(id(call), call)
    return sorted(seen.values(), key=lambda c: (c.lineno, c.col_offset))


def _drop_last_findings(model: ScriptModel) -> Iterator[Finding]:
    for call in _training_loaders(model):
        kw = keyword(call, "drop_last")
        if kw is not None and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
            continue  # already True, or computed by the script
        if keyword(call, "batch_sampler") is not None or any(k.arg is None for k in call.keywords):
            continue  # drop_last conflicts with batch_sampler; **kwargs may carry it
        batch_size = keyword(call, "batch_size")
        if (
            batch_size is not None
            and isinstance(batch_size.value, ast.Constant)
            and batch_size.value.value is None
        ):
            continue
        yield Finding(
            CODE,
            "the training DataLoader keeps a smaller last batch: its new shape makes XLA compile "
            "the step again every epoch; set drop_last=True (review: it drops the short batch)",
            model.span(kw.value if kw is not None else call),
            Severity.WARNING,
            fix=Fix(
                "Set drop_last=True",
                (SetKeyword(model.span(call), "drop_last", "True"),),
                safe=False,
                review_reason=REVIEW_DROP_LAST,
            ),
        )


def _is_mask_index(node: ast.Subscript) -> bool:
    index = node.slice
    if isinstance(index, ast.Compare):
        return True
    return isinstance(index, ast.Name) and "mask" in index.id.lower()


def _dynamic_op(model: ScriptModel, node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        q = model.call_name(node)
        if q in DYNAMIC_FUNCTIONS:
            return f"{q}(...)"
        if q == "torch.where" and len(node.args) == 1 and not node.keywords:
            return "torch.where(condition)"
        name = method_name(node)
        if name in DYNAMIC_METHODS and q is None:
            return f".{name}()"
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_mask_index(node):
        return "boolean-mask indexing"
    return None


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _drop_last_findings(model)
    for _loop, node in loop_nodes(model):
        what = _dynamic_op(model, node)
        if what is None:
            continue
        yield Finding(
            CODE,
            f"{what} has a data-dependent output shape: inside the training loop XLA "
            "recompiles whenever the size changes (and may fall back to the CPU)",
            model.span(node),
            Severity.WARNING,
            manual=MANUAL_OPS,
        )


HOVER_LOADER = """\
**XLA402 · `DataLoader(drop_last=True)`**

XLA compiles one graph per input shape. A last batch smaller than `batch_size` is a new shape,
so the step is compiled again (each epoch, and at evaluation). `drop_last=True` keeps every
training batch the same size. Same on the legacy and modern targets.
"""

HOVER_OPS = """\
**XLA402 · data-dependent shapes**

`nonzero`, `masked_select`, `unique`, one-argument `torch.where` and boolean-mask indexing
`t[mask]` return as many elements as the data holds, so their shape changes per step and XLA
recompiles (or runs them on the CPU). Keep shapes static: `torch.where(mask, x, 0)`,
`(x * mask).sum() / mask.sum()`, or pad to a fixed size.
"""

RULE = Rule(
    code=CODE,
    name="dynamic-shapes",
    category=Category.PERFORMANCE,
    summary="Shapes that change per step (training DataLoader without drop_last, nonzero, masked_select, unique, t[mask])",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch.utils.data.DataLoader": HOVER_LOADER,
        "torch.utils.data.DataLoader(drop_last=)": HOVER_LOADER,
        "torch.nonzero": HOVER_OPS,
        "torch.masked_select": HOVER_OPS,
        "torch.unique": HOVER_OPS,
        ".nonzero": HOVER_OPS,
        ".masked_select": HOVER_OPS,
        ".unique": HOVER_OPS,
    },
)
