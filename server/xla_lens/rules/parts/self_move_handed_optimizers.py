"""XLA109 where a module's own method moves the module and is handed the optimizer built
from it (held-out 178's DeepFM: ``optimizer = optim.Adam(model.parameters())``, then
``model.fit(loader, optimizer)``, whose first line is ``model = self.train().to(self.device)``).
On CUDA the move keeps the Parameter objects; on XLA it makes new ones, so the optimizer steps
the stale CPU copies and the model never trains, with no error (the probe measured the
converted run: weights unchanged, losses apart from the CPU run's by up to 5.4). Neither the
event analysis (the move is inside the method) nor the handed-module check (the module is
``self``) saw it.

Reported at the build, an error (so XLA101's picker fixes wait: parts/stale_optimizer_hold.py),
without a fix: the move is the method's own, so the model has to move before the optimizer is
built, at the caller."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.calls import classes
from ...semantic.handed_optimizers import handed_optimizer
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, method_name
from ...semantic.optimizer_events import moves_to_a_device
from ...semantic.script_facts import OPTIMIZER_CLASSES
from ..base import Finding, Severity

# Module methods that return the module itself: ``self.train().to(d)`` moves ``self``.
_RETURN_SELF = frozenset({"train", "eval", "float", "double", "half", "bfloat16", "requires_grad_"})
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


def _moves_self(model: ScriptModel, call: ast.Call) -> bool:
    if not isinstance(call.func, ast.Attribute) or not moves_to_a_device(model, call):
        return False
    recv: ast.AST = call.func.value
    while isinstance(recv, ast.Call) and method_name(recv) in _RETURN_SELF:
        recv = recv.func.value  # type: ignore[attr-defined]
    return isinstance(recv, ast.Name) and recv.id == "self"


def _is_module_class(model: ScriptModel, cls: ast.ClassDef, depth: int = 0) -> bool:
    for base in cls.bases:
        if (model.qualname(base) or "") in MODULE_BASES:
            return True
        parent = classes(model).get(base.id) if isinstance(base, ast.Name) else None
        if parent is not None and depth < 3 and _is_module_class(model, parent, depth + 1):
            return True
    return False


def _self_moving_methods(
    model: ScriptModel,
) -> list[tuple[ast.ClassDef, ast.FunctionDef | ast.AsyncFunctionDef, ast.Call, str]]:
    """(class, method, its move of ``self``, the optimizer parameter it is handed)."""
    found = []
    for cls in classes(model).values():
        if not _is_module_class(model, cls):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or fn.name == "__init__":
                continue
            optimizer = handed_optimizer(fn)
            if optimizer is None:
                continue
            move = next(
                (n for n in ast.walk(fn) if isinstance(n, ast.Call) and _moves_self(model, n)),
                None,
            )
            if move is not None:
                found.append((cls, fn, move, optimizer))
    return found


def _handed_value(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, param: str):
    for kw in call.keywords:
        if kw.arg == param:
            return kw.value
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][1:]  # without self
    if param in names and names.index(param) < len(call.args):
        value = call.args[names.index(param)]
        return None if isinstance(value, ast.Starred) else value
    return None


def _instance_of(model: ScriptModel, name: str, cls: ast.ClassDef, call: ast.Call) -> bool:
    """``name`` holds an instance of ``cls`` at ``call``: every binding of it in the call's
    function (or module level) before the call builds one."""
    scope = model.enclosing_function(call)
    values = [
        v
        for v in model.assigned_from(name)
        if model.enclosing_function(v) is scope and v.lineno < call.lineno
    ]
    return bool(values) and all(
        isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == cls.name
        for v in values
    )


def _build_from(model: ScriptModel, optimizer: ast.AST, instance: str, before: ast.Call):
    """The optimizer construction bound to ``optimizer`` (a name) that takes ``instance``'s
    parameters, written before ``before`` in the same function."""
    if not isinstance(optimizer, ast.Name):
        return None
    scope = model.enclosing_function(before)
    for value in model.assigned_from(optimizer.id):
        if not (isinstance(value, ast.Call) and model.call_name(value) in OPTIMIZER_CLASSES):
            continue
        if model.enclosing_function(value) is not scope or value.lineno >= before.lineno:
            continue
        if any(
            isinstance(n, ast.Call)
            and method_name(n) in ("parameters", "named_parameters")
            and isinstance(n.func.value, ast.Name)  # type: ignore[attr-defined]
            and n.func.value.id == instance  # type: ignore[attr-defined]
            for n in ast.walk(value)
        ):
            return value
    return None


def _moved_before(model: ScriptModel, build: ast.Call, call: ast.Call) -> bool:
    """The caller moves the instance before building the optimizer: the method's move is then
    onto the device it is on, which keeps the Parameters."""
    instance = call.func.value.id  # type: ignore[attr-defined]
    scope = model.enclosing_function(call)
    return any(
        isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == instance
        and n.lineno < build.lineno
        and model.enclosing_function(n) is scope
        and moves_to_a_device(model, n)
        for n in model.calls
    )


def self_move_handed_optimizers(model: ScriptModel, code: str) -> Iterator[Finding]:
    if ".to(" not in model.source and ".cuda(" not in model.source:
        return
    methods = _self_moving_methods(model)
    if not methods:
        return
    reported: set[int] = set()
    for cls, fn, move, param in methods:
        for call in model.calls:
            func = call.func
            if not (
                isinstance(func, ast.Attribute)
                and func.attr == fn.name
                and isinstance(func.value, ast.Name)
                and _instance_of(model, func.value.id, cls, call)
            ):
                continue
            handed = _handed_value(fn, call, param)
            build = _build_from(model, handed, func.value.id, call) if handed else None
            if build is None or id(build) in reported or _moved_before(model, build, call):
                continue
            reported.add(id(build))
            instance = func.value.id
            yield Finding(
                code,
                f"optimizer built from `{instance}` parameters before `{instance}.{fn.name}(...)`"
                f" (line {line_ref(call.lineno)}) hands it to `{cls.name}.{fn.name}`, which moves "
                f"the module to the device (`{model.segment(move)}`, line "
                f"{line_ref(move.lineno)}): on XLA the move creates new Parameter objects, so "
                "this optimizer updates stale CPU tensors and the model never trains",
                model.span(build),
                Severity.ERROR,
                manual=f"Move `{instance}` to the device it trains on before building the "
                f"optimizer (the move in `{fn.name}` then keeps its Parameters), or build the "
                f"optimizer in `{fn.name}` after the move.",
                related=((model.span(move), "the module moves to the device here"),),
            )


__all__ = ["self_move_handed_optimizers"]
