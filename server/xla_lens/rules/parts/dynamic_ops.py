"""XLA402's data-dependent ops: the calls and boolean-mask subscripts whose output shape
depends on the data (``nonzero``, ``masked_select``, ``unique``, one-argument ``torch.where``,
``t[mask]`` and ``t[mask] = v``). Shared by the rule's loop, helper and workspace-forward
searches."""

from __future__ import annotations

import ast

from ...semantic.arguments import local_bindings
from ...semantic.model import ScriptModel, method_name

# Data-dependent output shapes: (function, method) spellings.
DYNAMIC_FUNCTIONS = {
    "torch.nonzero": "nonzero",
    "torch.argwhere": "argwhere",
    "torch.masked_select": "masked_select",
    "torch.unique": "unique",
    "torch.unique_consecutive": "unique_consecutive",
}
DYNAMIC_METHODS = set(DYNAMIC_FUNCTIONS.values())
MASK_ASSIGNMENT = "boolean-mask assignment"


# ``(pos + neg).gt(0)``: comparisons written as tensor methods.
COMPARISON_METHODS = frozenset({"gt", "lt", "ge", "le", "eq", "ne", "logical_and", "logical_or"})


def is_comparison(node: ast.AST) -> bool:
    """``a > b``, ``~m``, ``(a > b) & (c < d)``, ``x.gt(0)``: a boolean tensor, if the operands
    are tensors."""
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.Call) and method_name(node) in COMPARISON_METHODS:
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return is_comparison(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr):
        return is_comparison(node.left) or is_comparison(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        # ``(u > 0) * (l == u)``: the product of two masks is their "and" (Rainbow).
        return is_comparison(node.left) and is_comparison(node.right)
    return False


def is_mask_index(model: ScriptModel, node: ast.Subscript) -> bool:
    index = node.slice
    if is_comparison(index):
        return True
    if not isinstance(index, ast.Name):
        return False
    if "mask" in index.id.lower():
        return True
    # ``keep = labels >= 0`` then ``logits[keep]``: one binding, a comparison; or a reshape
    # of such a mask (ssd.pytorch: ``pos_idx = pos.unsqueeze(2).expand_as(conf_data)``).
    binds = local_bindings(model, index.id, node)
    if len(binds) != 1 or binds[0].value is None:
        return False
    value = binds[0].value
    while isinstance(value, ast.Call) and method_name(value) in MASK_RESHAPES:
        value = value.func.value  # type: ignore[attr-defined]
    if isinstance(value, ast.Name) and value.id != index.id:
        inner = local_bindings(model, value.id, node)
        return len(inner) == 1 and inner[0].value is not None and is_comparison(inner[0].value)
    return is_comparison(value)


MASK_RESHAPES = frozenset({"unsqueeze", "expand_as", "expand", "view", "reshape", "squeeze"})


def dynamic_op(model: ScriptModel, node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        q = model.call_name(node)
        if q in DYNAMIC_FUNCTIONS:
            return f"{q}(...)"
        if q == "torch.where" and len(node.args) == 1 and not node.keywords:
            return "torch.where(condition)"
        name = method_name(node)
        if name in DYNAMIC_METHODS and q is None:
            return f".{name}()"
    if isinstance(node, ast.Subscript) and is_mask_index(model, node):
        if isinstance(node.ctx, ast.Store):
            # ``logits[logits < v] = -inf``: index_put through the mask's nonzero indices
            # (held-out 9 r6: aten::nonzero on XLA); masked_fill_ keeps one graph.
            return MASK_ASSIGNMENT
        if isinstance(node.ctx, ast.Load):
            return "boolean-mask indexing"
    return None
