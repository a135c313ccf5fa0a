"""Where the rest of a step reads what a deferred call (not a report) changes: with
``accum_log(logs, {"loss": loss.item()})`` moved into ``xm.add_step_closure``, a later
``print(logs["loss"])`` in the same step runs before the closure, and with ``logs = {}``
re-created each step it raises KeyError. Part of XLA401: the review reason names the line."""

from __future__ import annotations

import ast

from ...semantic.model import SCOPE_TYPES, ScriptModel, TrainingLoop, receiver
from ...semantic.tensors import scope_of
from .closure_changes import Changes, rest_of_iteration
from .closure_reads import Path, Reads, arguments, class_of, path_of, shown, with_keys
from .closure_timing import after, region_statements


def used_before_sync(model: ScriptModel, loop: TrainingLoop, stmt: ast.Expr) -> str | None:
    """Where the rest of the step reads what the deferred call (not a report) changes:
    ``accum_log(logs, {"loss": loss.item()})`` fills ``logs``, and a later
    ``print(logs["loss"])`` in the same step would run before the closure (None: no such read
    found in ``stmt``'s own frame)."""
    call = stmt.value
    assert isinstance(call, ast.Call)
    handed = Reads(model, stmt, frozenset())
    for node in [*arguments(call), receiver(call)]:
        path = path_of(node) if node is not None else None
        if path is not None:
            handed.add(path, "")
    if not handed.paths:
        return None
    cls = class_of(model, stmt)
    change = Changes(model, handed, cls, strict=True).at(stmt, {}, 0)
    if change is None:
        return None
    written = change[0]
    scope = scope_of(model, stmt)
    mine = Reads(model, stmt, frozenset())
    mine.add(written, "")
    for node in rest_of_iteration(model, loop, stmt):
        if node is stmt or not after(node, stmt) or scope_of(model, node) is not scope:
            continue
        if Changes(model, mine, cls, strict=True).at(node, {}, 0) is not None:
            continue  # another update of it (``accum_log(logs, ...)`` again), not a read
        read = _reads_of(model, node, written)
        if read is None:
            continue
        head = (
            f"line {node.lineno} reads `{shown(read)}` before the sync, and the deferred call "
            "that changes it runs only at the sync"
        )
        made = _re_created(model, scope, stmt, written)
        if made is not None:
            return (
                f"{head}: with `{shown(written)}` re-created on line {made} each step, it would "
                "raise KeyError, or miss this step's update"
            )
        return f"{head}: it would miss this step's update"
    return None


def _reads_of(model: ScriptModel, stmt: ast.AST, written: Path) -> Path | None:
    """The first path under or above ``written`` that ``stmt``'s own expressions load."""
    todo = [c for c in ast.iter_child_nodes(stmt) if not isinstance(c, ast.stmt)]
    found: list[tuple[int, int, Path]] = []
    while todo:
        node = todo.pop()
        if not isinstance(node, SCOPE_TYPES):
            todo.extend(ast.iter_child_nodes(node))
        if not isinstance(node, ast.Name | ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        parent = model.parent(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            continue
        path = path_of(node)
        if path is None:
            continue
        if isinstance(parent, ast.Call) and parent.func is node:
            path = path[:-1]  # ``x.log(...)`` reads ``x`` (a plain function: nothing)
            if not path:
                continue
        path = with_keys(model, node, path)
        n = min(len(path), len(written))
        if path[:n] == written[:n]:
            found.append((node.lineno, node.col_offset, path))
    return min(found)[2] if found else None


def _re_created(model: ScriptModel, scope: ast.AST, stmt: ast.stmt, written: Path) -> int | None:
    """The line before ``stmt`` in its frame that binds ``written`` to a new, empty-or-literal
    container each time the frame's step runs (``logs = {}``)."""
    for node in region_statements(model, scope):
        if not isinstance(node, ast.Assign) or node.lineno >= stmt.lineno:
            continue
        if not any(path_of(t) == written for t in node.targets):
            continue
        value = node.value
        fresh = isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            fresh = value.func.id in ("dict", "list", "set", "defaultdict", "OrderedDict")
        if fresh:
            return node.lineno
    return None
