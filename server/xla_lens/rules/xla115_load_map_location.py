"""XLA115: ``torch.load(..., map_location="cuda:N")`` — loading a checkpoint onto a CUDA device.

On an XLA host there is no CUDA: the load fails ("Attempting to deserialize object on a CUDA
device but torch.cuda.is_available() is False"). Loading onto the CPU is the XLA way:
``model.load_state_dict`` and ``optimizer.load_state_dict`` copy the tensors onto the device of
the parameters they fill, so a checkpoint used only through them means the same thing. A
loaded tensor or whole model used any other way stays on the CPU, so then the fix needs review.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.model import ScriptModel, is_cuda_string, keyword, method_name
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity

CODE = "XLA115"
LOADS = frozenset({"torch.load"})
# Checkpoint entries that hold plain Python values (counters, settings), not tensors.
PLAIN_KEYS = ("epoch", "step", "iter", "args", "config", "arch", "name", "version")
REVIEW = (
    "the checkpoint is used other than through load_state_dict ({use}); on the CPU those "
    "tensors stay off the XLA device — move them with .to(device) where they are used"
)


def _cuda_device_text(model: ScriptModel, node: ast.AST | None, depth: int = 0) -> bool:
    """``"cuda"``/``"cuda:0"``, ``f"cuda:{gpu}"``, ``"cuda:{}".format(gpu)``,
    ``torch.device("cuda", gpu)``, or a name bound only to those."""
    if node is None or depth > 3:
        return False
    if is_cuda_string(node):
        return True
    if isinstance(node, ast.Call):
        if method_name(node) == "format" and isinstance(node.func, ast.Attribute):
            base = node.func.value
            return isinstance(base, ast.Constant) and str(base.value).startswith("cuda")
        if model.call_name(node) == "torch.device" and node.args:
            return _cuda_device_text(model, node.args[0], depth + 1) or (
                isinstance(node.args[0], ast.Constant) and node.args[0].value == "cuda"
            )
        return False
    if isinstance(node, ast.Name):
        values = model.assigned_from(node.id)
        return bool(values) and all(_cuda_device_text(model, v, depth + 1) for v in values)
    return False


def _into_load_state_dict(model: ScriptModel, node: ast.AST) -> bool:
    parent = model.parent(node)
    return (
        isinstance(parent, ast.Call)
        and method_name(parent) == "load_state_dict"
        and node in parent.args
    )


def _other_use(model: ScriptModel, call: ast.Call) -> str | None:
    """The first use of the loaded checkpoint that is not a load_state_dict argument or a
    plain entry (epoch, args...), or None when there is none."""
    stmt = model.enclosing_statement(call)
    if not (
        isinstance(stmt, ast.Assign)
        and stmt.value is call
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return "its result is not kept in one name"
    name = stmt.targets[0].id
    scope = model.enclosing_function(call) or model.tree
    for node in model.walk_scope(scope):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        if _into_load_state_dict(model, node):
            continue
        parent = model.parent(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            key = parent.slice
            if _into_load_state_dict(model, parent):
                continue
            if isinstance(key, ast.Constant) and any(k in str(key.value) for k in PLAIN_KEYS):
                continue
            if isinstance(parent.ctx, ast.Load) and isinstance(model.parent(parent), ast.Compare):
                continue  # `if "optimizer" in ckpt` style tests never touch tensors
            return f"`{model.segment(parent)}` on line {node.lineno}"
        if isinstance(parent, ast.Compare):
            continue
        return f"`{name}` on line {node.lineno}"
    return None


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.calls_to(*LOADS):
        kw = keyword(call, "map_location")
        value = kw.value if kw is not None else (call.args[1] if len(call.args) > 1 else None)
        if value is None or not _cuda_device_text(model, value):
            continue
        use = _other_use(model, call)
        reason = "" if use is None else REVIEW.format(use=use)
        message = (
            "torch.load onto a CUDA device: an XLA host has no CUDA, so the load fails; load on "
            'the CPU (map_location="cpu") and let load_state_dict copy onto the XLA device'
        )
        yield Finding(
            CODE,
            message,
            model.span(value),
            Severity.WARNING,
            fix=Fix(
                'Load on the CPU: map_location="cpu"',
                (Replace(model.span(value), '"cpu"'),),
                safe=not reason,
                review_reason=reason,
            ),
        )


HOVER = """\
**XLA115 · torch.load onto a CUDA device**

`torch.load(path, map_location="cuda:0")` fails on an XLA host (no CUDA). Load on the CPU:
`torch.load(path, map_location="cpu")`. `model.load_state_dict(...)` and
`optimizer.load_state_dict(...)` copy each tensor onto the device of the parameter it fills,
so a checkpoint used through them ends up on the XLA device; anything else loaded from it
(a whole pickled model, a tensor) needs `.to(device)`.
"""

RULE = Rule(
    code=CODE,
    name="load-map-location",
    category=Category.CONVERSION,
    summary='torch.load(..., map_location="cuda:N") fails without CUDA → map_location="cpu" (load_state_dict copies to the XLA device)',
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={"torch.load": HOVER},
)
