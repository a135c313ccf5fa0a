"""XLA205 at a forward input, once DDP has no ``device_ids`` (the review fix dropped them, or
they were never written): a DDP model on the XLA device called with a tensor made on the CPU.

DDP without ``device_ids`` does not move inputs, so the XLA model gets a CPU tensor ("Expected
XLA tensor. Got: torch.FloatTensor"). The finding must not disappear with ``device_ids``: the
conversion that accepted their removal would otherwise crash with nothing left to say why.
Moving the input with the model's own device expression is safe when that expression means the
same device at the input.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel
from ..base import Finding, Fix, Replace, Severity
from .ddp_inputs import module_device, unmoved_input

XLA_DEVICES = frozenset({"torch_xla.device", "torch_xla.core.xla_model.xla_device"})


def cpu_input_findings(model: ScriptModel, call: ast.Call, code: str) -> Iterator[Finding]:
    """DDP without device_ids (as converted) around a model on the XLA device, called with
    a tensor made on the CPU: DDP does not move it, the model gets a CPU tensor ("Expected
    XLA tensor"). Said whether device_ids were dropped by the fix or never written."""
    if not model.uses_torch_xla:
        return
    device = module_device(model, call)
    if device is None:
        return
    cpu = unmoved_input(model, call)
    if cpu is None or cpu.forward is None or cpu.value is None:
        return
    message = (
        f"this input is a CPU tensor and the DDP model is on `{model.segment(device)}`: DDP "
        "without device_ids does not move it (the model would get a CPU tensor: "
        '"Expected XLA tensor")'
    )
    span = model.span(cpu.value)
    if not _reaches(model, device, cpu.value):
        yield Finding(
            code, message, span, Severity.WARNING, manual="move the input with .to(device)"
        )
        return
    shown = model.segment(cpu.value)
    if not isinstance(cpu.value, ast.Call | ast.Name | ast.Attribute | ast.Subscript):
        shown = f"({shown})"
    moved = f"{shown}.to({model.segment(device)})"
    fix = Fix(f"Move the input: {moved}", (Replace(span, moved),))
    yield Finding(code, message, span, Severity.WARNING, fix=fix)


def _reaches(model: ScriptModel, device: ast.expr, use: ast.expr) -> bool:
    """Whether the device expression means the same device where the input is built: a
    call without arguments (``torch_xla.device()``) or a name bound once, both in the
    scope of the input."""
    scope = model.enclosing_function(use)
    if model.enclosing_function(device) is not scope:
        return False
    if isinstance(device, ast.Call):
        return not device.args and not device.keywords and model.call_name(device) in XLA_DEVICES
    if not isinstance(device, ast.Name):
        return False
    stores = [
        n
        for n in model.name_nodes(device.id)
        if not isinstance(n.ctx, ast.Load) and model.enclosing_function(n) is scope
    ]
    params = scope.args if scope is not None else None
    is_param = params is not None and any(
        a.arg == device.id for a in [*params.posonlyargs, *params.args, *params.kwonlyargs]
    )
    if is_param:
        return not stores
    return len(stores) == 1 and stores[0].lineno < use.lineno
