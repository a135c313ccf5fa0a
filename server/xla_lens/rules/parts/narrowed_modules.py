"""A name that is a module because an ``isinstance`` test narrowed it (XLA401).

``for key, value in snapshot.items(): if isinstance(value, torch.nn.Module): value =
copy.deepcopy(value).eval().requires_grad_(False); snapshot[key] = value.cpu()`` copies a
model to the host on purpose (a pickled snapshot): ``value.cpu()`` is no tensor read. The kind
comes from the test, not from the name's bindings (the loop variable holds modules, tensors and
settings alike), so ``checkpoint_objects.object_kind`` cannot see it.
"""

from __future__ import annotations

import ast

from ...semantic.calls import classes
from ...semantic.model import ScriptModel, method_name, receiver
from .checkpoint_objects import MODULE, SELF_RETURNING, object_kind

FRAMES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def narrowed_module(model: ScriptModel, node: ast.AST | None) -> bool:
    """``node`` is a name read in the body of ``if isinstance(name, <module class>):`` (alone
    or in an ``and``), and every rebinding of it in that body keeps it a module (a
    ``copy.deepcopy`` / ``.eval()`` / ``.to(d)`` chain of itself, or a provable module)."""
    if not isinstance(node, ast.Name):
        return False
    child: ast.AST = node
    for a in model.ancestors(node):
        if isinstance(a, FRAMES):
            return False
        if isinstance(a, ast.If) and child in a.body and _tests_module(model, a.test, node.id):
            return all(_keeps_module(model, s, node.id) for s in _stores(a, node.id))
        child = a
    return False


def _tests_module(model: ScriptModel, test: ast.expr, name: str) -> bool:
    # In the body of ``a and b`` both hold; ``or`` / ``not`` prove nothing about ``name``.
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_tests_module(model, v, name) for v in test.values)
    if not (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[0], ast.Name)
        and test.args[0].id == name
    ):
        return False
    kinds = test.args[1]
    options = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return bool(options) and all(_module_class(model, k) for k in options)


def _module_class(model: ScriptModel, node: ast.expr) -> bool:
    """``torch.nn.Module``, another ``torch.nn`` class, or a script class deriving from it."""
    name = model.qualname(node) or ""
    if name == "torch.nn.Module":
        return True
    if name.startswith("torch.nn.") and not name.startswith(
        ("torch.nn.functional.", "torch.nn.utils.", "torch.nn.init.", "torch.nn.parameter.")
    ):
        return name.rpartition(".")[2][:1].isupper() and name != "torch.nn.Parameter"
    cls = classes(model).get(node.id) if isinstance(node, ast.Name) else None
    return cls is not None and any(model.qualname(b) == "torch.nn.Module" for b in cls.bases)


def _stores(block: ast.If, name: str) -> list[ast.AST]:
    """The statements (or targets) in the ``if`` body that bind ``name``."""
    out: list[ast.AST] = []
    for stmt in block.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store | ast.Del):
                out.append(n)
    return out


def _keeps_module(model: ScriptModel, target: ast.AST, name: str) -> bool:
    assign = model.parent(target)
    if not (isinstance(assign, ast.Assign) and assign.targets == [target]):
        return False  # ``for value in ...``, ``value += ...``, ``with ... as value``: unknown
    return _module_of(model, assign.value, name)


def _module_of(model: ScriptModel, value: ast.expr, name: str) -> bool:
    """``copy.deepcopy(x)`` or a self-returning module method (``.eval()``,
    ``.requires_grad_(False)``, ``.to(d)``) of the narrowed name, or a provable module."""
    if isinstance(value, ast.Name) and value.id == name:
        return True
    if isinstance(value, ast.Call):
        if model.call_name(value) == "copy.deepcopy" and len(value.args) == 1:
            return _module_of(model, value.args[0], name)
        recv = receiver(value)
        if method_name(value) in SELF_RETURNING and recv is not None:
            return _module_of(model, recv, name)
    return object_kind(model, value) == MODULE
