"""Parameters and the arguments their call sites pass: a value that reaches a function as a
parameter is what every call of that function in this script hands it."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import ScriptModel


def parameter_of(model: ScriptModel, name: ast.Name) -> tuple[ast.AST, int, str] | None:
    """``(function, positional index, name)`` when ``name`` reads a parameter of its function
    that the function never rebinds."""
    fn = model.enclosing_function(name)
    if fn is None:
        return None
    params = [*fn.args.posonlyargs, *fn.args.args]
    for i, a in enumerate(params):
        if a.arg == name.id:
            if any(
                isinstance(n, ast.Name) and n.id == name.id and isinstance(n.ctx, ast.Store)
                for n in model.walk_scope(fn)
            ):
                return None
            return fn, i, name.id
    if any(a.arg == name.id for a in fn.args.kwonlyargs):
        return fn, -1, name.id
    return None


def argument_values(model: ScriptModel, fn: ast.AST, index: int, name: str) -> list[ast.AST]:
    """What the call sites of ``fn`` in this script pass for one parameter; an empty list
    when any call site cannot be read (``*args``, a missing argument) or there is none."""
    values: list[ast.AST] = []
    is_method = isinstance(model.parent(fn), ast.ClassDef)
    for call in model.calls:
        if model.steps.callee(call) is not fn:
            continue
        kw = next((k.value for k in call.keywords if k.arg == name), None)
        pos = index - 1 if is_method and index >= 0 else index
        if kw is not None:
            values.append(kw)
        elif 0 <= pos < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[: pos + 1]
        ):
            values.append(call.args[pos])
        else:
            return []
    return values


def handed_values(model: ScriptModel, frame: ast.AST, name: str) -> list[ast.expr] | None:
    """What every call of the function ``frame`` in this script passes for its positional
    parameter ``name`` (held-out 157's distillation loop: ``train_distill(..., best_val_loss,
    ...)`` with ``best_val_loss = 1e9``); None when a call cannot be read, there is none, or
    another module imports this file (its calls are not seen here)."""
    if not isinstance(frame, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    params = [a.arg for a in [*frame.args.posonlyargs, *frame.args.args]]
    if name not in params:
        return None
    values = model.memo(
        (handed_values, frame, name),
        lambda: argument_values(model, frame, params.index(name), name),
    )
    if not values:
        return None
    from .workspace_callers import imported_elsewhere  # noqa: PLC0415 (reads other files)

    if imported_elsewhere(model):
        return None
    return values  # type: ignore[return-value]


def binds_parameter(frame: ast.AST, name: str) -> bool:
    """``name`` is a parameter of the function (or lambda) ``frame``."""
    if not isinstance(frame, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        return False
    args = frame.args
    return any(
        a is not None and a.arg == name
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
    )
