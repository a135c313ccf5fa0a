"""Where the rest of a step reads what a deferred call (not a report) changes: with
``accum_log(logs, {"loss": loss.item()})`` moved into ``xm.add_step_closure``, a later
``print(logs["loss"])`` in the same step runs before the closure, and with ``logs = {}``
re-created each step it raises KeyError. Part of XLA401: the review reason names the line."""

from __future__ import annotations

import ast

from ...semantic.line_refs import line_ref
from ...semantic.model import (
    SCOPE_TYPES,
    SYNC_CALLS,
    ScriptModel,
    TrainingLoop,
    method_name,
    receiver,
)
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
    rest = [
        n
        for n in rest_of_iteration(model, loop, stmt)
        if n is not stmt and after(n, stmt) and scope_of(model, n) is scope
    ]
    sync = next((n for n in rest if _syncs(model, n)), None)
    for node in rest:
        if sync is not None and not after(sync, node) and node is not sync:
            break  # the closure has run by then
        if Changes(model, mine, cls, strict=True).at(node, {}, 0) is not None:
            continue  # another update of it (``accum_log(logs, ...)`` again), not a read
        read = _reads_of(model, node, written)
        if read is None:
            continue
        head = (
            f"line {line_ref(node.lineno)} reads `{shown(read)}` before the sync, and the deferred call "
            "that changes it runs only at the sync"
        )
        made = _re_created(model, loop, stmt, written) if len(read) > len(written) else None
        if made is not None:
            line, error = made
            return (
                f"{head}: with `{shown(written)}` re-created on line {line_ref(line)} each step, the "
                f"lookup would raise {error} where only the deferred call sets it, and miss "
                "this step's update otherwise"
            )
        if method_name(call) == "append" and _from_the_end(node, shown(written)):
            # melgan's ``costs.append([loss_D.item(), ...])`` then ``costs[-1][0]`` (held-out 53).
            empty = any(
                isinstance(v, ast.List) and not v.elts for v in model.assigned_from(shown(written))
            )
            return f"{head}: `{shown(written)}[-1]` would be the previous step's entry" + (
                f", and on the first step, with `{shown(written)}` still empty, it raises IndexError"
                if empty
                else ""
            )
        return f"{head}: it would miss this step's update"
    return None


def _from_the_end(stmt: ast.AST, name: str) -> bool:
    """``name[-1]`` (any negative index) somewhere in ``stmt``."""
    return any(
        isinstance(n, ast.Subscript)
        and isinstance(n.value, ast.Name)
        and n.value.id == name
        and isinstance(n.slice, ast.UnaryOp)
        and isinstance(n.slice.op, ast.USub)
        for n in ast.walk(stmt)
    )


def _syncs(model: ScriptModel, stmt: ast.AST) -> bool:
    """``torch_xla.sync()`` / ``xm.mark_step()`` as a statement: step closures run there."""
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and model.call_name(stmt.value) in SYNC_CALLS
    )


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


def _re_created(
    model: ScriptModel, loop: TrainingLoop, stmt: ast.stmt, written: Path
) -> tuple[int, str] | None:
    """The line before ``stmt`` in its frame that binds ``written`` to a new dict or list
    each step (in the training loop's body, or anywhere in a step function it calls:
    ``logs = {}``), and the error a lookup in it raises."""
    scope = scope_of(model, stmt)
    in_loop_frame = scope is scope_of(model, loop.node)
    for node in region_statements(model, scope):
        if not isinstance(node, ast.Assign) or node.lineno >= stmt.lineno:
            continue
        if in_loop_frame and not any(a is loop.node for a in model.ancestors(node)):
            continue  # made once before the loop (or per epoch around it), not per step
        if not any(path_of(t) == written for t in node.targets):
            continue
        value = node.value
        made = (
            value.func.id
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            else ""
        )
        if isinstance(value, ast.Dict | ast.DictComp) or made in ("dict", "OrderedDict"):
            return node.lineno, "KeyError"
        if isinstance(value, ast.List | ast.ListComp) or made == "list":
            return node.lineno, "IndexError"
    return None
