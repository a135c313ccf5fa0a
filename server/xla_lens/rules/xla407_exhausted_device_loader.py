"""XLA407: a per-device loader built once and iterated again in every epoch.

``pl.ParallelLoader(loader, [device]).per_device_loader(device)`` is a one-pass iterator: its
worker threads feed one pass over the loader and stop. Iterated again it yields nothing, so an
epoch loop around it trains one epoch and then runs empty ones. Measured on torch_xla 2.9
(PJRT CPU): 4 batches in the first pass, 0 in the second; held-out 49's already-XLA control
then divided its epoch loss by zero steps. ``pl.MpDeviceLoader(loader, device)`` builds a new
``ParallelLoader`` each time it is iterated.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.line_refs import line_ref
from ..semantic.model import ScriptModel, method_name
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity

CODE = "XLA407"
WRAPPERS = frozenset({"enumerate", "iter", "tqdm", "trange", "zip"})
PARALLEL_LOADER = "torch_xla.distributed.parallel_loader.ParallelLoader"
REVIEW = (
    "the epochs after the first now iterate the data (before, they got no batches and trained "
    "nothing): check that every epoch is meant to train"
)


def _iterated_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id not in WRAPPERS or not node.args:
            return None
        node = node.args[0]
    return node.id if isinstance(node, ast.Name) else None


def _per_device_bindings(model: ScriptModel, scope: ast.AST) -> dict[str, ast.Assign]:
    out: dict[str, ast.Assign] = {}
    for node in model.walk_scope(scope):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and method_name(node.value) == "per_device_loader"
        ):
            out.setdefault(node.targets[0].id, node)
    return out


def _rebound_in(model: ScriptModel, loop: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(loop)
    )


def _outer_loop(model: ScriptModel, node: ast.AST, binding: ast.Assign) -> ast.AST | None:
    """The loop around ``node`` (in the same function) that does not hold ``binding``."""
    for a in model.ancestors(node):
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return None
        if isinstance(a, ast.For | ast.While) and not any(b is binding for b in ast.walk(a)):
            return a
    return None


def _fix(model: ScriptModel, binding: ast.Assign) -> Fix | None:
    """``pl.ParallelLoader(x, [d]).per_device_loader(d)`` → ``pl.MpDeviceLoader(x, d)``."""
    call = binding.value
    assert isinstance(call, ast.Call)
    inner = call.func.value  # type: ignore[attr-defined]
    if not (
        isinstance(inner, ast.Call)
        and model.call_name(inner) == PARALLEL_LOADER
        and isinstance(inner.func, ast.Attribute)
        and len(inner.args) == 2
        and not inner.keywords
        and isinstance(inner.args[1], ast.List | ast.Tuple)
        and len(inner.args[1].elts) == 1
        and len(call.args) == 1
        and not call.keywords
        and model.segment(inner.args[1].elts[0]) == model.segment(call.args[0])
    ):
        return None
    module = model.segment(inner.func.value)
    code = f"{module}.MpDeviceLoader({model.segment(inner.args[0])}, {model.segment(call.args[0])})"
    return Fix(
        f"Use {code} (re-iterable)",
        (Replace(model.span(call), code),),
        safe=False,
        review_reason=REVIEW,
    )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if "per_device_loader" not in model.source:
        return
    scopes: list[ast.AST] = [model.tree, *model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef)]
    for scope in scopes:
        bindings = _per_device_bindings(model, scope)
        if not bindings:
            continue
        for node in model.walk_scope(scope):
            if not isinstance(node, ast.For):
                continue
            name = _iterated_name(node.iter)
            binding = bindings.get(name or "")
            if binding is None or binding.lineno > node.lineno:
                continue
            outer = _outer_loop(model, node, binding)
            if outer is None or _rebound_in(model, outer, name):  # type: ignore[arg-type]
                continue
            yield Finding(
                CODE,
                f"`{name}` is a per-device loader built once (line {line_ref(binding.lineno)}) "
                f"and iterated again in every pass of the loop on line "
                f"{line_ref(outer.lineno)}: it is exhausted after one pass, so every later "  # type: ignore[attr-defined]
                "epoch gets no batches and trains nothing",
                model.span(binding.value),
                Severity.WARNING,
                fix=_fix(model, binding),
                manual="Build the per-device loader inside the epoch loop, or use "
                "pl.MpDeviceLoader(loader, device), which starts a new pass each time it is "
                "iterated.",
            )


RULE = Rule(
    code=CODE,
    name="exhausted-device-loader",
    category=Category.CORRECTNESS,
    summary="per_device_loader built once and iterated in every epoch: empty after the first → pl.MpDeviceLoader (re-iterable)",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={},
)
