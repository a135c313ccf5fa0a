"""Mixed precision facts: which device an autocast targets, which dtype it will run in.

Real scripts key autocast on a variable: ``torch.autocast(device_type=device_type)`` with
``device_type = "cuda" if "cuda" in device else "cpu"``, ``torch.autocast(device.type)``
with ``device = torch.device("cuda" if ... else "cpu")``. ``device_strings`` follows such an
expression to the device-type strings it can take. ``float16_uses`` lists what makes a
script fp16 after conversion (an autocast with an fp16 or unknown dtype, ``.half()``,
``torch.float16``): removing its loss scaler is then not meaning-preserving.
"""

from __future__ import annotations

import ast

from .arguments import literal_sources, local_bindings
from .model import ScriptModel, arg_or_keyword

MAX_DEPTH = 6
AUTOCASTS = {
    "torch.cuda.amp.autocast",
    "torch.cuda.amp.autocast_mode.autocast",
    "torch.autocast",
    "torch.amp.autocast",
    "torch.amp.autocast_mode.autocast",
    "torch_xla.amp.autocast",
}
BF16 = {"torch.bfloat16"}
FP16 = {"torch.float16", "torch.half"}
ACCELERATORS = {"cuda", "cpu", "mps"}
XLA_DEVICES = {"torch_xla.device", "torch_xla.core.xla_model.xla_device"}


def _device_type(text: str) -> str:
    return text.split(":", 1)[0]


def device_strings(model: ScriptModel, node: ast.AST | None, depth: int = 0) -> set[str] | None:
    """The device types ``node`` can evaluate to (``{"cuda", "cpu"}``), or None."""
    if node is None or depth > MAX_DEPTH:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {_device_type(node.value)}
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return {_device_type(first.value)}
        return None
    if isinstance(node, ast.IfExp):
        a = device_strings(model, node.body, depth + 1)
        b = device_strings(model, node.orelse, depth + 1)
        return None if a is None or b is None else a | b
    if isinstance(node, ast.Attribute) and node.attr == "type":
        return device_strings(model, node.value, depth + 1)
    if isinstance(node, ast.Call):
        name = model.call_name(node)
        if name == "torch.device":
            return device_strings(model, arg_or_keyword(node, 0, "type"), depth + 1)
        if name in XLA_DEVICES:
            return {"xla"}
        return None
    if isinstance(node, ast.Name):
        binds = local_bindings(model, node.id, node)
        if not binds:
            return None
        out: set[str] = set()
        for a in binds:
            got = device_strings(model, a.value, depth + 1)
            if got is None:
                return None
            out |= got
        return out
    sources = literal_sources(model, node)
    if sources is None:
        return None
    out = set()
    for s in sources:
        got = device_strings(model, s, depth + 1)
        if got is None:
            return None
        out |= got
    return out


def autocast_calls(model: ScriptModel) -> list[ast.Call]:
    return [c for c in model.calls if model.call_name(c) in AUTOCASTS]


def autocast_dtype(model: ScriptModel, call: ast.Call) -> ast.expr | None:
    # dtype is the second parameter except in torch_xla.amp.autocast(device, enabled, dtype)
    # and torch.cuda.amp.autocast(enabled, dtype).
    name = model.call_name(call) or ""
    index = 2 if name == "torch_xla.amp.autocast" else 1
    return arg_or_keyword(call, index, "dtype")


def _dtype_names(model: ScriptModel, node: ast.AST, depth: int = 0) -> set[str] | None:
    """Qualified dtype names (``torch.float16``) ``node`` can be, or None."""
    if depth > MAX_DEPTH:
        return None
    q = model.qualname(node)
    if q is not None and q.startswith("torch."):
        return {q}
    if isinstance(node, ast.IfExp):
        a = _dtype_names(model, node.body, depth + 1)
        b = _dtype_names(model, node.orelse, depth + 1)
        return None if a is None or b is None else a | b
    if isinstance(node, ast.Name):
        binds = local_bindings(model, node.id, node)
        out: set[str] = set()
        for a in binds:
            got = _dtype_names(model, a.value, depth + 1) if a.value is not None else None
            if got is None:
                return None
            out |= got
        return out or None
    return None


def _default_dtype_device(model: ScriptModel, call: ast.Call) -> str | None:
    """The device-type expression of a dtype-less autocast unless it surely ends on XLA
    or the CPU (the CUDA forms are rewritten to bf16 by XLA102's safe fix)."""
    name = model.call_name(call) or ""
    if name.startswith("torch.cuda.") or name == "torch_xla.amp.autocast":
        return None
    device = arg_or_keyword(call, 0, "device_type")
    if device is None:
        return None
    values = device_strings(model, device)
    if values is not None and (values == {"cuda"} or values <= {"xla", "cpu"}):
        return None
    return model.segment(device)


def float16_uses(model: ScriptModel) -> list[tuple[ast.AST, str]]:
    """(node, why) for what keeps the script in float16 after conversion (a shared list:
    callers only read it)."""
    return model.memo(float16_uses, lambda: _float16_uses(model))


def _float16_uses(model: ScriptModel) -> list[tuple[ast.AST, str]]:
    out: list[tuple[ast.AST, str]] = []
    counted: set[int] = set()
    for call in autocast_calls(model):
        dtype = autocast_dtype(model, call)
        if dtype is None:
            # No dtype: bfloat16 once it runs on XLA (XLA102 writes it for the CUDA forms),
            # but the CUDA default is float16, so the device type must be known to end there.
            device = _default_dtype_device(model, call)
            if device is not None:
                out.append(
                    (
                        call,
                        f"this autocast has no dtype and its device type `{device}` may stay "
                        "CUDA, where the default is float16",
                    )
                )
            continue
        counted.update(id(n) for n in ast.walk(dtype))
        names = _dtype_names(model, dtype)
        if names is None:
            out.append((call, f"the autocast dtype `{model.segment(dtype)}` may be float16"))
        elif names & FP16:
            out.append((call, "this autocast runs in float16"))
    for node in model.nodes_of(ast.Attribute):
        if id(node) not in counted and model.qualname(node) in FP16:
            out.append((node, f"`{model.segment(node)}` is used"))
    for call in model.method_calls("half"):
        if not call.args:
            out.append((call, "`.half()` makes float16 weights or inputs"))
    out.sort(key=lambda item: (getattr(item[0], "lineno", 0), getattr(item[0], "col_offset", 0)))
    return out
