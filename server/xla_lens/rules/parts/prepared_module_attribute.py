"""XLA110 on ``model.module`` of a model accelerate prepared (held-out 48's Omega-Net:
``model, ... = self.accelerator.prepare(...)`` then ``model.module.denoise_from_noisy(...)``).

accelerate wraps a prepared model in DistributedDataParallel only for multi-GPU (and
multi-CPU) runs; on XLA it returns the model itself, its gradients reduced in the optimizer
step (``prepare_model`` in accelerate/accelerator.py: no DDP branch for XLA, only
``xmp.MpModelWrapper`` for fork-launched processes), so ``.module`` raises AttributeError there,
as on one GPU. ``accelerator.unwrap_model(model)`` returns the bare model in every setting: the
DDP's ``.module`` where there is one, so the rewrite is safe."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.frameworks import ownership
from ...semantic.model import ScriptModel, method_name
from ..base import Finding, Fix, Replace, Severity


def _prepared(model: ScriptModel, scope: ast.AST) -> dict[str, str]:
    """Names (or ``self.x``) bound from an ``<accelerator>.prepare(...)`` call in ``scope``,
    each with the accelerator's text."""
    out: dict[str, str] = {}
    for node in model.walk_scope(scope):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        if method_name(call) != "prepare" or not isinstance(call.func, ast.Attribute):
            continue
        accelerator = model.segment(call.func.value)
        for target in node.targets:
            elts = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
            for t in elts:
                if isinstance(t, ast.Name | ast.Attribute):
                    out[model.segment(t)] = accelerator
    return out


def _guarded(model: ScriptModel, node: ast.AST) -> bool:
    """Inside ``if hasattr(x, "module")`` / ``isinstance(x, DDP)``: the script checks first."""
    for a in model.ancestors(node):
        if isinstance(a, ast.If | ast.IfExp):
            text = model.segment(a.test)
            if "hasattr" in text or "isinstance" in text:
                return True
    return False


def prepared_module_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    if ownership(model).framework != "accelerate" or ".module" not in model.source:
        return
    by_scope: dict[int, dict[str, str]] = {}
    for node in model.nodes_of(ast.Attribute):
        assert isinstance(node, ast.Attribute)
        if node.attr != "module" or not isinstance(node.ctx, ast.Load):
            continue
        scope = model.enclosing_function(node) or model.tree
        prepared = by_scope.get(id(scope))
        if prepared is None:
            prepared = by_scope[id(scope)] = _prepared(model, scope)
        owner = model.segment(node.value)
        accelerator = prepared.get(owner)
        if accelerator is None or _guarded(model, node):
            continue
        replacement = f"{accelerator}.unwrap_model({owner})"
        yield Finding(
            code,
            f"`{owner}.module` of a model accelerate prepared: accelerate wraps it in "
            "DistributedDataParallel only on several GPUs; on XLA it returns the model itself "
            "(the optimizer step reduces the gradients), so `.module` raises AttributeError "
            "there, as on one GPU",
            model.span(node),
            Severity.WARNING,
            fix=Fix(f"Use {replacement}", (Replace(model.span(node), replacement),)),
        )
