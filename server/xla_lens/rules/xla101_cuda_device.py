"""XLA101: the script targets a CUDA device."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import xla_api
from ..semantic.model import Emitter, ScriptModel, is_cuda_string, keyword, method_name, receiver
from .base import Category, Finding, Fix, Replace, ReplaceStatement, Rule, RuleContext, Severity

CODE = "XLA101"
IS_AVAILABLE = "torch.cuda.is_available"


def _device_ref_at(model: ScriptModel, e: Emitter, target, node: ast.AST) -> str:
    """The device variable if it is visibly bound where ``node`` runs, else a device call."""
    var = model.device_variable
    if var is not None:
        fn = model.enclosing_function(node)
        for a in model.assignments.get(var, []):
            afn = model.enclosing_function(a)
            before = (a.lineno, a.col_offset) < (node.lineno, node.col_offset)
            if afn is None and (fn is not None or before):
                return var
            if afn is not None and afn is fn and before:
                return var
    return xla_api.device(e, target)


def _is_cuda_picker(model: ScriptModel, node: ast.AST) -> bool:
    """``"cuda" if torch.cuda.is_available() else "cpu"``."""
    if not isinstance(node, ast.IfExp):
        return False
    test_calls = [n for n in ast.walk(node.test) if isinstance(n, ast.Call)]
    return any(model.call_name(c) == IS_AVAILABLE for c in test_calls) and (
        is_cuda_string(node.body) or is_cuda_string(node.orelse)
    )


def _finding(model: ScriptModel, node: ast.AST, message: str, fix: Fix | None, manual=None):
    return Finding(CODE, message, model.span(node), Severity.WARNING, fix=fix, manual=manual)


def _replace(model: ScriptModel, e: Emitter, node: ast.AST, code: str, title: str) -> Fix:
    return Fix(title, (Replace(model.span(node), code), *e.imports))


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    target = ctx.target
    handled: set[int] = set()

    # if torch.cuda.is_available(): device = "cuda" / else: device = "cpu"
    for node in model.nodes_of(ast.If):
        if any(
            model.call_name(c) == IS_AVAILABLE
            for c in ast.walk(node.test)
            if isinstance(c, ast.Call)
        ):
            names = _picker_assignments(node)
            if names is None:
                continue
            e = Emitter(model)
            code = f"{names} = {xla_api.device(e, target)}"
            handled.update(id(n) for n in ast.walk(node))
            yield _finding(
                model,
                node,
                "device picked by torch.cuda.is_available(): on an XLA device that is False, "
                "so this silently trains on the CPU",
                Fix(
                    f"Use the XLA device: {code}",
                    (ReplaceStatement(model.span(node), code), *e.imports),
                ),
            )

    for call in model.calls:
        if id(call) in handled:
            continue
        name = model.call_name(call)
        if (
            name == "torch.device"
            and call.args
            and (is_cuda_string(call.args[0]) or _is_cuda_picker(model, call.args[0]))
        ):
            e = Emitter(model)
            code = xla_api.device(e, target)
            handled.update(id(n) for n in ast.walk(call))
            yield _finding(
                model,
                call,
                "CUDA device: on XLA the device is " + code,
                _replace(model, e, call, code, f"Replace with {code}"),
            )
            continue
        if method_name(call) == "cuda":
            recv = receiver(call)
            if recv is None or model.qualname(recv) == "torch":
                continue
            e = Emitter(model)
            dev = _device_ref_at(model, e, target, call)
            code = f"{model.segment(recv)}.to({dev})"
            yield _finding(
                model,
                call,
                f".cuda() moves to a CUDA device: use .to({dev}) for the XLA device",
                _replace(model, e, call, code, f"Replace .cuda() with .to({dev})"),
            )
            continue
        if method_name(call) == "to":
            target_arg = call.args[0] if call.args else None
            kw = keyword(call, "device")
            for arg in (target_arg, kw.value if kw else None):
                if arg is not None and is_cuda_string(arg):
                    e = Emitter(model)
                    dev = _device_ref_at(model, e, target, call)
                    handled.add(id(arg))
                    yield _finding(
                        model,
                        arg,
                        f'.to("cuda") moves to a CUDA device: use .to({dev})',
                        _replace(model, e, arg, dev, f"Move to {dev} instead"),
                    )
        kw = keyword(call, "device")
        if kw is not None and id(kw.value) not in handled and is_cuda_string(kw.value):
            e = Emitter(model)
            dev = _device_ref_at(model, e, target, call)
            handled.add(id(kw.value))
            yield _finding(
                model,
                kw.value,
                f'device="cuda" allocates on a CUDA device: use device={dev}',
                _replace(model, e, kw.value, dev, f"Allocate on {dev}"),
            )

    # device = "cuda" if torch.cuda.is_available() else "cpu"  /  device = "cuda"
    for name, assigns in model.assignments.items():
        for a in assigns:
            value = a.value
            if value is None or id(value) in handled:
                continue
            if _is_cuda_picker(model, value) or (is_cuda_string(value) and "device" in name):
                e = Emitter(model)
                code = xla_api.device(e, target)
                handled.add(id(value))
                yield _finding(
                    model,
                    value,
                    f"{name} names a CUDA device: on XLA use {code}",
                    _replace(model, e, value, code, f"Use {code}"),
                )


def _picker_assignments(node: ast.If) -> str | None:
    """The assigned name when both branches only assign one device variable."""
    if not node.orelse:
        return None
    names = set()
    for stmt in [*node.body, *node.orelse]:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            return None
        names.add(stmt.targets[0].id)
    if len(names) != 1:
        return None
    name = names.pop()
    return name if "dev" in name else None


HOVER_DEVICE = """\
**XLA101 · CUDA device → XLA device**

On XLA the model and every tensor live on the XLA device, not `cuda`.

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `torch_xla.device()` |
| legacy (1.13, SageMaker Training Compiler) | `xm.xla_device()` |

Fix: `device = torch_xla.device()`, then `model.to(device)`, `batch.to(device)`.
`torch.cuda.is_available()` is `False` on TPU/Trainium, so a CUDA/CPU picker silently runs on the CPU.
"""

RULE = Rule(
    code=CODE,
    name="cuda-device",
    category=Category.CONVERSION,
    summary='CUDA device (torch.device("cuda"), .cuda(), .to("cuda"), device="cuda", is_available() pickers) → the XLA device',
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch.device": HOVER_DEVICE,
        ".cuda": HOVER_DEVICE,
        "torch.cuda.is_available": HOVER_DEVICE,
    },
)
