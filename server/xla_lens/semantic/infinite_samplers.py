"""Samplers that never end (FastGAN's ``InfiniteSamplerWrapper``: ``__iter__`` returns a
generator that loops ``while True``, ``__len__`` says ``2 ** 31``): a DataLoader drawing from one
has no last batch, so nothing about a short last batch applies to it. Read from the class's
text, in the script or a workspace module, never run."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .node_helpers import dotted

if TYPE_CHECKING:
    from .model import ScriptModel

# A length no finite dataset reaches: what "infinite" samplers report.
HUGE = 2**30


def _constant(node: ast.expr) -> int | float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow | ast.Mult):
        left, right = _constant(node.left), _constant(node.right)
        if left is None or right is None or abs(right) > 64:
            return None
        return left**right if isinstance(node.op, ast.Pow) else left * right
    if isinstance(node, ast.Call) and dotted(node.func) == "int" and len(node.args) == 1:
        return _constant(node.args[0])
    if dotted(node) == "sys.maxsize":
        return 2**63 - 1
    return None


def _loops_forever(fn: ast.AST) -> bool:
    return any(
        isinstance(n, ast.While) and isinstance(n.test, ast.Constant) and n.test.value is True
        for n in ast.walk(fn)
    )


def _is_infinite_class(cls: ast.ClassDef, functions: dict[str, ast.AST]) -> bool:
    for stmt in cls.body:
        if not isinstance(stmt, ast.FunctionDef):
            continue
        if stmt.name == "__len__":
            returns = [n.value for n in ast.walk(stmt) if isinstance(n, ast.Return) and n.value]
            values = [_constant(v) for v in returns]
            if values and all(v is not None and v >= HUGE for v in values):
                return True
        if stmt.name == "__iter__":
            if _loops_forever(stmt):
                return True
            called = {
                n.func.id
                for n in ast.walk(stmt)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            }
            if any(name in functions and _loops_forever(functions[name]) for name in called):
                return True
    return False


def is_infinite_sampler(model: ScriptModel, value: ast.expr, depth: int = 0) -> bool:
    """``value`` (a DataLoader's ``sampler=``) builds a sampler that never ends."""
    if isinstance(value, ast.Name) and depth < 2:
        values = model.assigned_from(value.id)
        return bool(values) and all(is_infinite_sampler(model, v, depth + 1) for v in values)
    if not isinstance(value, ast.Call):
        return False
    from .workspace_classes import class_reference, script_module  # noqa: PLC0415

    if not model.path or model.path.startswith("<"):
        cls = next(
            (
                n
                for n in model.tree.body
                if isinstance(n, ast.ClassDef) and n.name == dotted(value.func)
            ),
            None,
        )
        return cls is not None and _is_infinite_class(cls, dict(model.functions))
    ref = class_reference(script_module(model), value.func)
    if ref is None:
        return False
    functions = {n.name: n for n in ref.module.tree.body if isinstance(n, ast.FunctionDef)}
    return _is_infinite_class(ref.node, functions)
