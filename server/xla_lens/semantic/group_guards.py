"""Code that runs only where a torch.distributed process group exists: under
``if dist.is_initialized():`` or after ``if not dist.is_initialized(): return ...`` in the
same function (YOLOX's and detectron2's comm helpers, held-out 31). There
``dist.get_rank()`` / ``dist.get_world_size(group)`` ask an existing group, which answers on
the "xla" backend as on NCCL: nothing to change at the call.
"""

from __future__ import annotations

import ast

from .model import ScriptModel

GROUP_TEST = "torch.distributed.is_initialized"


def _asks_initialized(model: ScriptModel, node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and model.call_name(node) == GROUP_TEST


def _requires_group(model: ScriptModel, test: ast.expr) -> bool:
    """``test`` is true only when a group exists: ``dist.is_initialized()``, alone or
    ``and``-ed with other conditions."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_requires_group(model, v) for v in test.values)
    return _asks_initialized(model, test)


def _leaves_without_group(model: ScriptModel, test: ast.expr) -> bool:
    """``test`` is true whenever no group exists: ``not dist.is_initialized()``, alone or
    ``or``-ed with other conditions."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(_leaves_without_group(model, v) for v in test.values)
    return (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and _asks_initialized(model, test.operand)
    )


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return | ast.Raise)


def runs_only_with_a_group(model: ScriptModel, node: ast.AST) -> bool:
    """Whether ``node`` runs only when a process group has been initialised (up to the
    enclosing function)."""
    child = node
    for parent in model.ancestors(node):
        if isinstance(parent, ast.If) and child in parent.body:
            if _requires_group(model, parent.test):
                return True
        if isinstance(parent, ast.IfExp) and child is parent.body:
            if _requires_group(model, parent.test):
                return True
        for block in ("body", "orelse", "finalbody"):
            stmts = getattr(parent, block, None)
            if isinstance(stmts, list) and child in stmts:
                for earlier in stmts[: stmts.index(child)]:
                    if (
                        isinstance(earlier, ast.If)
                        and _exits(earlier.body)
                        and _leaves_without_group(model, earlier.test)
                    ):
                        return True
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return False
        child = parent
    return False
