"""XLA108: a state dict whose entries the script has already copied to the CPU before
``torch.save`` (Continual-Learning-Benchmark's ``save_model``: ``for key in state.keys():
state[key] = state[key].cpu()``, held-out 75; or ``{k: v.cpu() for k, v in ...}``). Its file
holds CPU tensors and loads anywhere: xm.save would change nothing."""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, const_str
from ...semantic.node_helpers import method_name


def _to_cpu(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = method_name(node)
    if name == "cpu" and not node.args:
        return True
    return name == "to" and len(node.args) == 1 and const_str(node.args[0]) == "cpu"


def _copies_every_entry(loop: ast.For, name: str) -> bool:
    """``for key in name(.keys()): name[key] = name[key].cpu()``."""
    if not isinstance(loop.target, ast.Name):
        return False
    it = loop.iter
    if isinstance(it, ast.Call) and method_name(it) == "keys":
        it = it.func.value  # type: ignore[attr-defined]
    if not (isinstance(it, ast.Name) and it.id == name):
        return False
    key = loop.target.id
    for stmt in loop.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(t := stmt.targets[0], ast.Subscript)
            and isinstance(t.value, ast.Name)
            and t.value.id == name
            and isinstance(t.slice, ast.Name)
            and t.slice.id == key
            and _to_cpu(stmt.value)
        ):
            return True
    return False


def copied_to_cpu(model: ScriptModel, save: ast.Call, obj: ast.AST | None) -> bool:
    """``obj`` is a name whose entries were all made CPU copies before ``save``, in the same
    function."""
    if (
        isinstance(obj, ast.Call)
        and method_name(obj) == "state_dict"
        and isinstance(owner := obj.func.value, ast.Name)  # type: ignore[attr-defined]
    ):
        return _moved_to_cpu(model, save, owner.id)
    if not isinstance(obj, ast.Name):
        return False
    scope = model.enclosing_function(save) or model.tree
    before = [
        n for n in ast.walk(scope) if isinstance(n, ast.For | ast.Assign) and n.lineno < save.lineno
    ]
    for node in sorted(before, key=lambda n: n.lineno, reverse=True):
        if isinstance(node, ast.For) and _copies_every_entry(node, obj.id):
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == obj.id for t in node.targets
        ):
            value = node.value
            return isinstance(value, ast.DictComp) and _to_cpu(value.value)
    return False


def _moved_to_cpu(model: ScriptModel, save: ast.Call, name: str) -> bool:
    """``model = model.to("cpu")`` (or ``model.cpu()``) is the last statement before ``save``
    in the same function that binds or moves ``name`` (held-out 79's TPU control: the master
    moves the model to the CPU, then saves ``model.state_dict()``): its state is on the CPU."""
    scope = model.enclosing_function(save) or model.tree
    last: ast.AST | None = None
    for node in ast.walk(scope):
        if not isinstance(node, ast.Assign | ast.Expr) or node.lineno >= save.lineno:
            continue
        binds = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        )
        moves = (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and method_name(node.value) in {"to", "cpu", "cuda"}
            and isinstance(node.value.func.value, ast.Name)  # type: ignore[attr-defined]
            and node.value.func.value.id == name  # type: ignore[attr-defined]
        )
        if (binds or moves) and (last is None or node.lineno > last.lineno):  # type: ignore[attr-defined]
            last = node
    stmt = model.enclosing_statement(save)
    if last is None or stmt is None or not _same_block(model, last, stmt):
        return False  # a move in a branch (or a loop) may not run before the save
    value = last.value  # type: ignore[attr-defined]
    return _to_cpu(value) and isinstance(value.func.value, ast.Name) and value.func.value.id == name


def _same_block(model: ScriptModel, first: ast.AST, then: ast.stmt) -> bool:
    """``first`` is a statement of the block that holds ``then`` (so it runs before it)."""
    parent = model.parent(first)
    if parent is None or model.parent(then) is not parent:
        return False
    return any(
        isinstance(body, list) and first in body and then in body
        for body in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody"))
    )
