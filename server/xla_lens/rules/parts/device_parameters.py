"""A device a helper function takes from its caller, and whether a call hands it the XLA
device.

``def autocast(device, dtype): device_type = torch.device(device).type; return
torch.autocast(device_type, ...)`` in ``train.py``: XLA102 there cannot tell which device the
autocast is for, so it says "CUDA autocast" with a review fix. A script that calls
``autocast(device, ...)`` with ``device = xm.xla_device()`` (held-out 66's timm-face TPU
script) runs it as XLA's autocast: that site needs nothing for this caller.
"""

from __future__ import annotations

import ast

from ...semantic.device_intent import XLA_DEVICE_CALLS
from ...semantic.model import ScriptModel
from ...semantic.span import Span

# Local rebindings followed from the device expression back to a parameter.
MAX_HOPS = 3


def device_parameter(model: ScriptModel, span: Span) -> tuple[str, int] | None:
    """(name, positional index; -1 keyword-only) of the enclosing function's parameter the
    device of the call at ``span`` (its first argument or ``device_type=``/``device=``) is
    computed from, through local assignments; None when it reads anything else."""
    call = next(
        (
            c
            for c in model.calls
            if (c.lineno - 1, c.col_offset) == (span.start.line, span.start.col)
        ),
        None,
    )
    fn = model.enclosing_function(call) if call is not None else None
    if call is None or fn is None:
        return None
    device = next((k.value for k in call.keywords if k.arg in ("device_type", "device")), None)
    if device is None and call.args:
        device = call.args[0]
    if device is None:
        return None
    positional = [*fn.args.posonlyargs, *fn.args.args]
    params = {a.arg: i for i, a in enumerate(positional)}
    params.update({a.arg: -1 for a in fn.args.kwonlyargs})
    found: set[str] = set()
    frontier = [device]
    for _ in range(MAX_HOPS + 1):
        names = {n.id for e in frontier for n in ast.walk(e) if isinstance(n, ast.Name)}
        frontier = []
        for name in names - {"torch"}:
            if name in params:
                found.add(name)
                continue
            values = _local_values(model, fn, name)
            if not values:
                return None  # a global or something unfollowed: not only the parameter
            frontier.extend(values)
        if not frontier:
            break
    else:
        return None
    if len(found) != 1:
        return None
    (name,) = found
    return name, params[name]


def _local_values(model: ScriptModel, fn: ast.AST, name: str) -> list[ast.expr]:
    values = []
    for node in model.walk_scope(fn):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            stmt = model.parent(node)
            if not (isinstance(stmt, ast.Assign) and node in stmt.targets):
                return []  # a loop target, an unpacking: not a value we can read
            values.append(stmt.value)
    return values


def passes_xla_device(model: ScriptModel, call: ast.Call, name: str, index: int) -> bool:
    """``call`` passes the XLA device for the parameter ``name`` (at ``index``): a
    ``torch_xla.device()`` / ``xm.xla_device()`` call, or a name every assignment of which is
    one."""
    value = next((k.value for k in call.keywords if k.arg == name), None)
    if value is None and 0 <= index < len(call.args):
        if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
            return False
        value = call.args[index]
    if isinstance(value, ast.Name):
        assigned = model.assigned_from(value.id)
        return bool(assigned) and all(_xla_device_call(model, v) for v in assigned)
    return _xla_device_call(model, value)


def _xla_device_call(model: ScriptModel, node: ast.AST | None) -> bool:
    return isinstance(node, ast.Call) and model.call_name(node) in XLA_DEVICE_CALLS
