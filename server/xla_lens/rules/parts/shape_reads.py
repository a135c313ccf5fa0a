"""A host read inside the training loop whose value sets a tensor's shape (part of XLA401).

``max_len = lengths.max().item()`` then ``inputs = inputs[:, :max_len]`` (rnn-transducer,
held-out 159): the value is needed on the host before the next op can even be traced, so
neither a step closure nor a read after the loop keeps the program, and every new value is a
new graph to compile. The advice is the dynamic-shape one: read the lengths from the loader's
CPU batch before it moves (no device sync), and pad or bucket so that few shapes occur.
"""

from __future__ import annotations

import ast

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, method_name

# Calls whose arguments are sizes: a new value is a new shape.
SIZE_CALLS = frozenset(
    {
        "torch.zeros",
        "torch.ones",
        "torch.empty",
        "torch.full",
        "torch.arange",
        "torch.randn",
        "torch.rand",
        "torch.randint",
        "range",
    }
)
SIZE_METHODS = frozenset(
    {
        "view",
        "reshape",
        "expand",
        "narrow",
        "repeat",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
    }
)

SHAPE_MANUAL = (
    "This value sets a shape ({where}): the host needs it before the next op can be traced, so "
    "neither a step closure nor a read after the loop works, and each new value compiles a new "
    "graph. Read it from the loader's CPU tensor before the batch moves to the device (no "
    "device sync), and pad or bucket the lengths so that few shapes occur (XLA402)."
)


def _bound_name(stmt: ast.stmt | None, node: ast.AST) -> str | None:
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and any(n is node for n in ast.walk(stmt.value))
    ):
        return stmt.targets[0].id
    return None


# What the value may pass through on its way to a size and still be that size.
ARITHMETIC = (ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.keyword)
NUMBER_CALLS = frozenset({"int", "min", "max", "round"})


def _sizes(model: ScriptModel, use: ast.Name) -> bool:
    """``use`` is a slice bound or a size argument, as itself or in arithmetic (``n // 2``),
    not the base of an attribute or subscript (``x.shape[0]`` of a tensor named like it)."""
    child: ast.AST = use
    for parent in model.ancestors(use):
        if isinstance(parent, ast.Slice):
            return True
        if isinstance(parent, ast.Call) and child is not parent.func:
            name = model.call_name(parent) or ""
            if name in NUMBER_CALLS:
                child = parent
                continue
            return name in SIZE_CALLS or method_name(parent) in SIZE_METHODS
        if not isinstance(parent, ARITHMETIC):
            return False
        child = parent
    return False


def shape_read_manual(
    model: ScriptModel, loop: ast.AST, stmt: ast.stmt | None, node: ast.AST
) -> str | None:
    """SHAPE_MANUAL when the read is bound to a name that a later line of the loop uses as a
    size (a slice bound, a size argument); None otherwise."""
    name = _bound_name(stmt, node)
    if name is None or stmt is None:
        return None
    for n in ast.walk(loop):
        if (
            isinstance(n, ast.Name)
            and n.id == name
            and isinstance(n.ctx, ast.Load)
            and n.lineno > stmt.end_lineno  # type: ignore[operator]
            and _sizes(model, n)
        ):
            shown = model.segment(model.enclosing_statement(n) or n)[:60]
            return SHAPE_MANUAL.format(where=f"line {line_ref(n.lineno)}: `{shown}`")
    return None
