"""Rank checks around a call, in its function or in the functions that call it.

Multi-replica scripts write checkpoints and logs on one replica: ``if rank == 0:`` around the
write, or around a call of the helper (or method) that writes, one or two calls up:

    def _save_snapshot(self, epoch):
        torch.save(snapshot, path)          # guarded: every call of _save_snapshot is
    def train(self):
        if self.local_rank == 0:
            self._save_snapshot(epoch)

Rules ask either "is this ever under a rank check" (a save that only some replicas reach) or
"is it always" (output every replica repeats); both follow the callers the same way here.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .calls import FunctionNode, callee, class_methods, classes
from .model import ScriptModel, dotted

# The rank check around ``node`` inside its own function (an ``if``, an early return...), or
# None; each rule says what counts as a rank check.
GuardInScope = Callable[[ast.AST], ast.AST | None]


def call_sites(model: ScriptModel, fn: FunctionNode) -> list[ast.Call]:
    """The calls of this script that run ``fn``: ``f(...)``, ``self.m(...)``, a method on an
    instance (``recorder.dump(...)`` after ``recorder = Recorder(...)``) or on an attribute
    holding one (``self.recorder.dump(...)`` after ``self.recorder = Recorder(...)``)."""
    return model.memo(_sites_by_callee, lambda: _sites_by_callee(model)).get(fn, [])


def run_function(model: ScriptModel, call: ast.Call) -> FunctionNode | None:
    """The function of this script ``call`` runs (see ``call_sites``), or None. Every call a
    rule cannot resolve is one whose guard it cannot see: "every caller is guarded" must count
    the instance calls too, or a method called once unguarded on an instance reads as guarded."""
    target = model.steps.callee(call)
    if target is not None:
        return target
    # ``Recorder(...)`` runs ``__init__``; ``recorder.dump(...)`` a method of an instance.
    found = callee(model, call)
    if found is not None:
        return found[0]
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute):
        cls = _attribute_class(model, func.value)
        return class_methods(cls).get(func.attr) if cls is not None else None
    return None


def _attribute_class(model: ScriptModel, node: ast.Attribute) -> ast.ClassDef | None:
    """The class of this script that every assignment of ``self.x`` constructs."""
    text = dotted(node)
    if text is None or not text.startswith("self.") or text.count(".") != 1:
        return None
    values = attribute_values(model)
    found: ast.ClassDef | None = None
    for value in values.get(text, []):
        cls = (
            classes(model).get(value.func.id)
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            else None
        )
        if cls is None or (found is not None and cls is not found):
            return None
        found = cls
    return found


def attribute_values(model: ScriptModel) -> dict[str, list[ast.expr]]:
    """``self.net`` -> the values assigned to it anywhere in the script (once per parse)."""
    return model.memo(attribute_values, lambda: _attribute_values(model))


def _attribute_values(model: ScriptModel) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = {}
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        for target in node.targets:
            if isinstance(target, ast.Attribute) and (text := dotted(target)) is not None:
                out.setdefault(text, []).append(node.value)
    return out


def _sites_by_callee(model: ScriptModel) -> dict[FunctionNode, list[ast.Call]]:
    sites: dict[FunctionNode, list[ast.Call]] = {}
    for call in model.calls:
        target = run_function(model, call)
        if target is not None:
            sites.setdefault(target, []).append(call)
    return sites


def caller_rank_guard(
    model: ScriptModel,
    node: ast.AST,
    guard_in_scope: GuardInScope,
    *,
    every_caller: bool,
    levels: int = 2,
) -> ast.AST | None:
    """The rank check ``node`` runs under: in its function, or, up to ``levels`` calls up,
    around the calls of the function holding it. With ``every_caller`` each call site must be
    guarded (the function never runs unguarded); otherwise one guarded site is enough. A
    function this script never calls has no caller guard."""
    found = guard_in_scope(node)
    if found is not None or levels <= 0:
        return found
    fn = model.enclosing_function(node)
    if fn is None:
        return None
    first: ast.AST | None = None
    for site in call_sites(model, fn):
        if site is node or fn in _functions_around(model, site):
            continue  # recursion: the call inside fn says nothing about its callers
        guard = caller_rank_guard(
            model, site, guard_in_scope, every_caller=every_caller, levels=levels - 1
        )
        if guard is None and every_caller:
            return None
        if guard is not None and not every_caller:
            return guard
        first = first or guard
    return first


def _functions_around(model: ScriptModel, node: ast.AST) -> list[ast.AST]:
    return [
        a for a in model.ancestors(node) if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
