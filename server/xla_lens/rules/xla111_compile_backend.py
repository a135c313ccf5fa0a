"""XLA111: ``torch.compile`` with no backend in a script that runs on XLA.

torch.compile's default backend, inductor, generates CUDA/CPU kernels and does not know XLA
tensors: on torch_xla 2.9 the first call fails with ``InductorError: KeyError: 'xla'``.
``backend="openxla"`` hands the captured graph to XLA instead.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.frameworks import ownership
from ..semantic.model import ScriptModel, keyword
from .base import (
    Category,
    Finding,
    Fix,
    Replace,
    Rule,
    RuleContext,
    SetKeyword,
    Severity,
    Span,
)
from .parts.device_held import device_held

CODE = "XLA111"
COMPILE = "torch.compile"
BACKEND = '"openxla"'
MESSAGE = (
    "torch.compile with the default backend (inductor) fails on XLA tensors "
    "(InductorError: KeyError: 'xla'): pass backend=\"openxla\", or trace the whole step "
    "with torch_xla.compile"
)
LEGACY_MANUAL = (
    "torch 1.13 (the legacy target) has no torch.compile: remove it; lazy XLA tensors already "
    "build one graph per step"
)


def _bare_decorators(model: ScriptModel) -> Iterator[ast.expr]:
    """``@torch.compile`` written without a call (a call is found with the other calls)."""
    for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
        assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        for dec in fn.decorator_list:
            if not isinstance(dec, ast.Call) and model.qualname(dec) == COMPILE:
                yield dec


MODULE_METHODS = frozenset(
    {"parameters", "named_parameters", "state_dict", "load_state_dict", "train", "eval", "to",
     "cuda", "forward", "modules", "children", "zero_grad"}
)  # fmt: skip


def _module_compiles(model: ScriptModel) -> Iterator[ast.Call]:
    """``model.compile()`` (``nn.Module.compile``: torch.compile of its forward, in place,
    inductor by default; k-diffusion's ``--compile``, held-out 45) on a local name the script
    also calls or uses as a module (``.parameters()``, ``.to(...)``, ``.eval()``...)."""
    for call in model.method_calls("compile"):
        recv = call.func.value  # type: ignore[attr-defined]
        if not isinstance(recv, ast.Name) or model.qualname(recv) is not None:
            continue  # ``re.compile``: a module's function, not a model's method
        if keyword(call, "backend") is not None or any(kw.arg is None for kw in call.keywords):
            continue
        if call.args:
            continue  # nn.Module.compile takes keywords only
        if _module_like(model, recv.id):
            yield call


def _module_like(model: ScriptModel, name: str) -> bool:
    for node in model.name_nodes(name):
        parent = model.parent(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return True
        if isinstance(parent, ast.Attribute) and parent.attr in MODULE_METHODS:
            return True
    return False


def _finding(span: Span, fix: Fix, ctx: RuleContext) -> Finding:
    if ctx.target == "legacy":
        # torch 1.13 (the legacy target's) has no torch.compile and no openxla backend.
        return Finding(CODE, MESSAGE, span, Severity.ERROR, manual=LEGACY_MANUAL)
    return Finding(CODE, MESSAGE, span, Severity.ERROR, fix=fix)


def _review(model: ScriptModel, ctx: RuleContext) -> str:
    """Why the backend change waits for review: on tensors Convert leaves on CUDA, openxla
    finds nothing to compile and runs the model eagerly (same numbers, the compile silently
    lost: held-out 10, SRGAN's compiled generator while its device change is for review)."""
    held = device_held(model, ctx.target)
    if held is None:
        return ""
    return f"with tensors off the XLA device openxla silently runs the model uncompiled; {held}"


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if ownership(model).device_agnostic:
        # Lightning picks the device at run time: backend="openxla" written into the script
        # would break its CUDA/CPU runs (the .md page says what to do for a TPU run).
        return
    title = f"Compile with backend={BACKEND}"
    for call in model.calls_to(COMPILE):
        if keyword(call, "backend") is not None or any(kw.arg is None for kw in call.keywords):
            continue  # a backend is chosen (or may be, through **kwargs)
        reason = _review(model, ctx)
        ops = (SetKeyword(model.span(call), "backend", BACKEND),)
        fix = Fix(title, ops, safe=not reason, review_reason=reason)
        yield _finding(model.span(call), fix, ctx)
    for call in _module_compiles(model):
        reason = _review(model, ctx)
        ops = (SetKeyword(model.span(call), "backend", BACKEND),)
        yield _finding(
            model.span(call), Fix(title, ops, safe=not reason, review_reason=reason), ctx
        )
    for dec in _bare_decorators(model):
        reason = _review(model, ctx)
        ops = (Replace(model.span(dec), f"{model.segment(dec)}(backend={BACKEND})"),)
        yield _finding(model.span(dec), Fix(title, ops, safe=not reason, review_reason=reason), ctx)


HOVER = """\
**XLA111 · torch.compile on XLA needs backend="openxla"**

torch.compile's default backend, inductor, writes CUDA/CPU kernels and does not know XLA
tensors. Measured on torch 2.9.0 + torch_xla 2.9.0 (PJRT CPU): `torch.compile(model)` on a
model on the XLA device fails at its first call with `InductorError: KeyError: 'xla'`;
`torch.compile(model, backend="openxla")` runs and matches eager mode.

| target | code |
|---|---|
| modern (torch_xla ≥ 2.5) | `torch.compile(model, backend="openxla")`, or `torch_xla.compile(step_fn)` for a whole training step |
| legacy (1.13) | torch.compile does not exist in torch 1.13: drop it (lazy tensors already build one graph per step) |

Fix: add `backend="openxla"` (safe: inductor cannot compile XLA tensors at all). A backend
that is already given is left alone; `mode=` is ignored by openxla.
"""

RULE = Rule(
    code=CODE,
    name="compile-backend",
    category=Category.CONVERSION,
    summary='torch.compile(model) with no backend → backend="openxla" (inductor fails on XLA '
    "tensors)",
    severity=Severity.ERROR,
    check=check,
    has_fix=True,
    hover={COMPILE: HOVER, f"{COMPILE}(backend=)": HOVER},
)
