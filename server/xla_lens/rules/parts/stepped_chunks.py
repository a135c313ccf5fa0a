"""Chunks taken by stepping a loop through the data (XLA402):

    for start in range(0, len(data), size):
        yield data[start : start + size]

Python's slice stops at the end of the data, so the last chunk is shorter whenever ``len(data)``
is not a multiple of ``size``: a new shape, and one more compile of the step (the e2e sample
odd_batch.py: 23 rows in chunks of 8 give 8, 8, 7). The ``min``-capped form
(``src[i:i + seq_len]`` with ``seq_len = min(bptt, len(src) - 1 - i)``) is XLA402's own test.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel


def stepped_chunk(model: ScriptModel, node: ast.Subscript) -> ast.For | None:
    """The ``for i in range(a, len(x), n)`` whose chunk ``x[i:i + n]`` this slice takes."""
    chunk = node.slice
    if not (isinstance(chunk, ast.Slice) and isinstance(chunk.lower, ast.Name)):
        return None
    upper = chunk.upper
    if not (isinstance(upper, ast.BinOp) and isinstance(upper.op, ast.Add)):
        return None
    start = chunk.lower.id
    sides = [upper.left, upper.right]
    others = [s for s in sides if not (isinstance(s, ast.Name) and s.id == start)]
    if len(others) != 1:
        return None
    size = model.segment(others[0])
    data = model.segment(node.value)
    for a in model.ancestors(node):
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return None
        if not (isinstance(a, ast.For) and isinstance(a.target, ast.Name) and a.target.id == start):
            continue
        it = a.iter
        if not (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "range"
            and len(it.args) == 3
            and "range" not in model.imports
        ):
            return None
        stop, step = it.args[1], it.args[2]
        stops_at_end = (
            isinstance(stop, ast.Call)
            and isinstance(stop.func, ast.Name)
            and stop.func.id == "len"
            and len(stop.args) == 1
            and model.segment(stop.args[0]) == data
        ) or (
            isinstance(stop, ast.Call)
            and isinstance(stop.func, ast.Attribute)
            and stop.func.attr == "size"
            and model.segment(stop.func.value) == data
        )
        return a if stops_at_end and model.segment(step) == size else None
    return None
