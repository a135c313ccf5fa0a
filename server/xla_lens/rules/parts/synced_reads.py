"""XLA401: a read of a value the step's sync already computed.

``optimizer.step(); xm.mark_step(); optimizer.zero_grad(); print(loss.item())`` (held-out
114's LLaVA control): the sync ran the step's graph, so ``loss`` is data on the device and the
read only copies it (measured there: 3 executions with or without the read, no compile of
its own). Reported were a compile and a run that never happen. Only the plain case: the sync
is an earlier statement of the read's block or of a block around it inside the loop, and
nothing between them binds the value read again.
"""

from __future__ import annotations

import ast

from ...semantic.model import SYNC_CALLS, ScriptModel


def read_after_sync(model: ScriptModel, node: ast.AST, stmt: ast.stmt) -> bool:
    """A sync runs before ``stmt`` in the same iteration with nothing binding the read's value
    between: in ``stmt``'s block, or in a block around it inside the innermost loop (``if
    step % 10 == 0: print(loss.item())`` after the sync)."""
    root = _root_name(node)
    loop = model.innermost_loop(stmt)
    if root is None or loop is None:
        return False
    current: ast.AST = stmt
    while current is not loop:
        block = _block_of(model, current)
        if block is None:
            return False
        at = next(i for i, s in enumerate(block) if s is current)
        for earlier in reversed(block[:at]):
            if _binds(earlier, root):
                return False
            if _is_sync(model, earlier):
                return True
        parent = model.parent(current)
        if parent is None or not isinstance(parent, ast.If | ast.With | ast.For | ast.While):
            return False
        if parent is not loop and isinstance(parent, ast.For | ast.While):
            return False  # an inner loop: its earlier iterations run between
        current = parent
    return False


# Methods that only copy a computed value out (an op such as ``.mean()`` or ``[0]`` makes a
# new graph, which the read then compiles and runs).
COPYING = frozenset({"detach", "cpu", "item", "tolist"})


def _root_name(node: ast.AST) -> str | None:
    """``loss`` of ``loss.detach().cpu().item()``; None when an op stands between."""
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr not in COPYING or node.args or node.keywords:
                return None
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr == "data":
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _block_of(model: ScriptModel, stmt: ast.stmt) -> list[ast.stmt] | None:
    parent = model.parent(stmt)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None


def _binds(stmt: ast.stmt, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(stmt)
    )


def _is_sync(model: ScriptModel, stmt: ast.stmt) -> bool:
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    name = model.call_name(call)
    if name in SYNC_CALLS:
        return True
    return name == "torch_xla.core.xla_model.optimizer_step" and any(
        k.arg == "barrier" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in call.keywords
    )


__all__ = ["read_after_sync"]
