"""Chunks sliced off data that already lives on the device (XLA402).

word_language_model's ``get_batch(source, i)`` takes ``source[i:i + seq_len]`` of
``train_data``, which ``batchify`` moved to the device once (held-out 169). A Python int in a
slice is a constant of the traced graph, so each step's new offset ``i`` is a new graph:
measured on PJRT CPU, ten offsets compiled ten graphs, and the probe's steps took 60-85 s each.
Sliced on the CPU and then moved, every chunk is an upload of the same shape: one graph.

The evidence, in this file: the sliced name is bound to a placement (``.to(device)``,
``.cuda()``, ``device=``) or to the result of a function of this file that returns one; when it
is a parameter of the helper that slices, every call of the helper passes such a name.
"""

from __future__ import annotations

import ast

from ...semantic.device_datasets import placement_call
from ...semantic.model import ScriptModel

MAX_HOPS = 3


def device_resident_source(model: ScriptModel, node: ast.Subscript) -> ast.AST | None:
    """The placement that put the sliced tensor on the device, or None."""
    return _placed(model, node.value, MAX_HOPS)


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    return [p.arg for p in (*a.posonlyargs, *a.args)]


def _placed(model: ScriptModel, expr: ast.AST, hops: int) -> ast.AST | None:
    """Where ``expr`` was placed on a device: a placement itself; a parameter every call of its
    function passes a placed value; a name every binding of which is placed; or a call of this
    file's function whose every return is a placement."""
    if hops < 0:
        return None
    direct = placement_call(expr)
    if direct is not None:
        return direct
    if isinstance(expr, ast.Name):
        fn = model.enclosing_function(expr)
        if fn is not None and expr.id in _parameters(fn):
            return _passed_placed(model, fn, _parameters(fn).index(expr.id), hops - 1)
        values = model.assigned_from(expr.id)
        found = [_placed(model, v, hops - 1) for v in values]
        return found[0] if found and all(f is not None for f in found) else None
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        fn = model.functions.get(expr.func.id)
        if fn is None or model.qualname(expr.func) is not None:
            return None
        returns = [r.value for r in model.walk_scope(fn) if isinstance(r, ast.Return) and r.value]
        found = [placement_call(r) for r in returns]
        return found[0] if found and all(f is not None for f in found) else None
    return None


def _passed_placed(
    model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef, index: int, hops: int
) -> ast.AST | None:
    calls = [
        c
        for c in model.calls
        if isinstance(c.func, ast.Name) and c.func.id == fn.name and model.qualname(c.func) is None
    ]
    found = None
    for call in calls:
        if any(isinstance(a, ast.Starred) for a in call.args) or index >= len(call.args):
            return None
        placed = _placed(model, call.args[index], hops)
        if placed is None:
            return None
        found = found or placed
    return found


__all__ = ["device_resident_source"]
