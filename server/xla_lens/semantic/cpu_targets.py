"""A move's target that is the CPU under a name: ``cpu_device = torch.device("cpu:0")`` then
``model.to(cpu_device)`` is no move onto an accelerator."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import ScriptModel

NOT_DEVICES = {"cpu", "meta"}


def names_the_cpu(model: ScriptModel, call: ast.Call) -> bool:
    """``model.to(cpu_device)`` with every ``cpu_device = torch.device("cpu:0")`` (leimao's QAT
    script moves the trained model back for int8 conversion, held-out 129)."""
    target = (
        call.args[0]
        if call.args
        else next((k.value for k in call.keywords if k.arg == "device"), None)
    )
    if not isinstance(target, ast.Name):
        return False
    values = model.assigned_from(target.id)
    return bool(values) and all(_cpu_value(model, v) for v in values)


def _cpu_value(model: ScriptModel, value: ast.AST) -> bool:
    if isinstance(value, ast.Call) and model.call_name(value) == "torch.device" and value.args:
        value = value.args[0]
    return (
        isinstance(value, ast.Constant)
        and isinstance(value.value, str)
        and value.value.split(":")[0] in NOT_DEVICES
    )
