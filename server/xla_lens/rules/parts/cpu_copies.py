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
    if name != "to" or len(node.args) != 1:
        return False
    arg = node.args[0]
    if const_str(arg) == "cpu":
        return True
    # ``.to(torch.device('cpu'))`` (held-out 79's AdaIN trainer copies each entry that way).
    return (
        isinstance(arg, ast.Call)
        and isinstance(arg.func, ast.Attribute)
        and arg.func.attr == "device"
        and isinstance(arg.func.value, ast.Name)
        and arg.func.value.id == "torch"
        and len(arg.args) == 1
        and not arg.keywords
        and const_str(arg.args[0]) == "cpu"
    )


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
            return (isinstance(value, ast.DictComp) and _to_cpu(value.value)) or (
                # ``state_dict = model.models[0].to('cpu').state_dict()`` (held-out 85's TPU
                # control): the state of a module just moved to the CPU.
                isinstance(value, ast.Call)
                and method_name(value) == "state_dict"
                and _to_cpu(value.func.value)  # type: ignore[attr-defined]
            )
    return False


def _moved_to_cpu(model: ScriptModel, save: ast.Call, name: str) -> bool:
    """``model = model.to("cpu")`` (or ``model.cpu()``) is the last statement before ``save``
    in its block that binds or moves ``name``, with nothing nested between that could
    (held-out 79's TPU control: the master moves the model to the CPU, then saves
    ``model.state_dict()``): its state is on the CPU. Only the block's statements before the
    save are read, so a big module pays for its own block, not its whole text per save."""
    stmt = model.enclosing_statement(save)
    parent = model.parent(stmt) if stmt is not None else None
    block = next(
        (
            b
            for f in ("body", "orelse", "finalbody")
            if isinstance(b := getattr(parent, f, None), list) and stmt in b
        ),
        None,
    )
    if block is None:
        return False
    for before in reversed(block[: block.index(stmt)]):
        if isinstance(before, ast.Assign | ast.Expr):
            value = before.value
            binds = isinstance(before, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in before.targets
            )
            moves = (
                isinstance(before, ast.Expr)
                and isinstance(value, ast.Call)
                and method_name(value) in {"to", "cpu", "cuda"}
                and isinstance(value.func.value, ast.Name)  # type: ignore[attr-defined]
                and value.func.value.id == name  # type: ignore[attr-defined]
            )
            if binds or moves:
                return (
                    _to_cpu(value)
                    and isinstance(value.func.value, ast.Name)  # type: ignore[attr-defined]
                    and value.func.value.id == name  # type: ignore[attr-defined]
                )
            continue
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(before)):
            return False  # a block between may bind or move it
    return False


def _same_block(model: ScriptModel, first: ast.AST, then: ast.stmt) -> bool:
    """``first`` is a statement of the block that holds ``then`` (so it runs before it)."""
    parent = model.parent(first)
    if parent is None or model.parent(then) is not parent:
        return False
    return any(
        isinstance(body, list) and first in body and then in body
        for body in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody"))
    )
