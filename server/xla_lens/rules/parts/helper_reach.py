"""XLA118: the functions of a helper's module that a call of the helper runs, so the evidence
named at the call is what that call executes: the helper itself, the module's functions it
calls (``setup`` -> ``get_dist_info``), and a module function it hands to a launcher
(``mp.spawn(_worker, ...)``), ``CLOSURE_DEPTH`` calls deep."""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel

# Functions of the helper's module it calls, followed this deep (setup -> get_dist_info).
CLOSURE_DEPTH = 2


def reached_functions(model: ScriptModel, fn: ast.AST) -> list[ast.AST]:
    """``fn`` and the functions of its module it calls, ``CLOSURE_DEPTH`` deep."""
    out, frontier = [fn], [fn]
    for _ in range(CLOSURE_DEPTH):
        found = []
        for region in frontier:
            for n in model.walk_scope(region):
                if isinstance(n, ast.Call):
                    for callee in _runs(model, n):
                        if callee not in out and callee not in found:
                            found.append(callee)
        out.extend(found)
        frontier = found
    return out


def _runs(model: ScriptModel, call: ast.Call) -> list[ast.AST]:
    """The module's functions ``call`` runs: its callee, and a function of the module handed
    to it (``mp.spawn(_worker, ...)``, ``Process(target=_worker)``: a launcher's worker)."""
    out: list[ast.AST] = []
    callee = model.steps.callee(call)
    if callee is not None:
        out.append(callee)
    for arg in (*call.args, *(k.value for k in call.keywords)):
        if isinstance(arg, ast.Name) and arg.id not in model.imports:
            fn = model.steps.module_functions.get(arg.id)
            if fn is not None and fn not in out:
                out.append(fn)
    return out
