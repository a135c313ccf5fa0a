"""Attributes of ``self`` that only ever hold a Python number.

``self.gradient_accumulation_steps = gradient_accumulation_steps`` with the constructor's
``gradient_accumulation_steps: int = 1`` (KIE's LayoutLMv3 trainer, held-out 163): then
``total_loss += loss.item() * self.gradient_accumulation_steps`` stays a Python float, and
formatting it reads nothing from the device. Pure analysis, per parse.
"""

from __future__ import annotations

import ast

from .model import ScriptModel
from .pickers import attribute_stores

NUMBER_TYPES = frozenset({"int", "float", "bool"})


def _number_parameter(model: ScriptModel, value: ast.Name) -> bool:
    fn = model.enclosing_function(value)
    if fn is None:
        return False
    positional = [*fn.args.posonlyargs, *fn.args.args]
    defaults: dict[str, ast.expr] = {}
    if fn.args.defaults:
        names = [a.arg for a in positional][-len(fn.args.defaults) :]
        defaults.update(zip(names, fn.args.defaults, strict=True))
    for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
        if d is not None:
            defaults[a.arg] = d
    for arg in (*positional, *fn.args.kwonlyargs):
        if arg.arg != value.id:
            continue
        if arg.annotation is not None:
            return isinstance(arg.annotation, ast.Name) and arg.annotation.id in NUMBER_TYPES
        default = defaults.get(arg.arg)
        return (
            isinstance(default, ast.Constant)
            and isinstance(default.value, int | float)
            and not isinstance(default.value, bool)
        )
    return False


def _number(model: ScriptModel, value: ast.expr) -> bool:
    if isinstance(value, ast.Constant):
        return isinstance(value.value, int | float)
    return isinstance(value, ast.Name) and _number_parameter(model, value)


def number_attribute(model: ScriptModel, expr: ast.AST) -> bool:
    """``self.<attr>`` every store of which in the script (on ``self``) is a number: a
    numeric literal, or a parameter annotated ``int``/``float``/``bool`` (or, unannotated,
    with a numeric default)."""
    if not (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == "self"
    ):
        return False
    stores = [
        s
        for s in attribute_stores(model).get(expr.attr, [])
        if any(
            isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
            for t in s.targets
        )
    ]
    aug = [
        n
        for n in model.nodes_of(ast.AugAssign)
        if isinstance(n.target, ast.Attribute)  # type: ignore[attr-defined]
        and n.target.attr == expr.attr  # type: ignore[attr-defined]
    ]
    return bool(stores) and not aug and all(_number(model, s.value) for s in stores)


__all__ = ["number_attribute"]
