"""Where XLA107 puts the sync it adds to a training loop: on a line every iteration that ran a
step reaches. EDM's loop ends in a once-per-tick block that most iterations skip with ``if not
done: continue``; a sync appended at the end of the body ran once per tick, and each graph
spanned ten steps (100 steps, 10 executions). XLA401's closure timing asks the same question
(where will the added sync be?) and should take its answer from here too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, TrainingLoop
from ...semantic.node_helpers import LOOP_TYPES, SCOPE_TYPES
from ...semantic.steps import trailing_exit_guard

Pos = tuple[int, int]


@dataclass(frozen=True)
class SyncPoint:
    """Where the loop's sync goes: before ``before`` (a statement of the loop body), or at
    the end of the body when None. ``exit`` is the early exit it must precede; ``why_not``
    says why no line of the body runs after the step on every iteration (then the sync goes
    where it did before, and the fix is for review)."""

    before: ast.stmt | None
    exit: ast.AST | None = None
    why_not: str = ""


def _pos(node: ast.AST) -> Pos:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _walk(
    node: ast.AST, inner: ast.AST | None = None, handler: bool = False
) -> Iterator[tuple[ast.AST, ast.AST | None, bool]]:
    """The nodes of one body statement, each with the nested loop it sits in (whose body a
    ``break``/``continue`` there leaves, not this loop's) and whether it is in an ``except``
    handler. Nested functions and classes run elsewhere: not entered."""
    yield node, inner, handler
    if isinstance(node, SCOPE_TYPES):
        return  # a function defined in the body: its returns are not the loop's
    for field, value in ast.iter_fields(node):
        for child in value if isinstance(value, list) else [value]:
            if not isinstance(child, ast.AST) or isinstance(child, SCOPE_TYPES):
                continue
            in_body = isinstance(node, LOOP_TYPES) and field == "body"
            yield from _walk(
                child,
                inner if inner is not None or not in_body else node,
                handler or isinstance(node, ast.ExceptHandler),
            )


def _is_step(model: ScriptModel, call: ast.Call) -> bool:
    """A call that runs the training step, as the loop search counts them."""
    steps = model.steps
    return (
        model._is_step_call(call)
        or steps.step_callee(call) is not None
        or steps.external_step(call) is not None
    )


def sync_point(model: ScriptModel, loop: TrainingLoop) -> SyncPoint:
    """Where a sync added to ``loop`` runs on every iteration that ran a step.

    A ``continue`` of this loop after a step skips the rest of the body on the iterations that
    take it, for as long as the loop runs: the sync goes before the body statement holding the
    first one. Statements after that point (an optimizer step after ``if (i + 1) % accum:
    continue``, a once-per-tick block) join the next iteration's graph: still one graph per
    iteration. When that statement holds the first step too, no line of the body runs after the
    step on every iteration: for review.

    Not counted: a ``continue`` before the first step (nothing of that iteration to sync), one
    of a nested loop, one in an ``except`` handler (a failing step; the next sync takes what it
    left). A ``break``/``return``/``sys.exit()`` ends the loop: it skips one sync, on the last
    iteration, and the graph grows no further; the exit checks ending the body get the sync
    before them (``trailing_exit_guard``) so the last step's closures run, as before."""
    # XLA401 asks once per host read in the loop: one answer per loop and parse.
    return model.memo(("sync_point", loop.node), lambda: _sync_point(model, loop))


def _sync_point(model: ScriptModel, loop: TrainingLoop) -> SyncPoint:
    body = loop.node.body
    steps: list[Pos] = []
    skips: list[tuple[int, ast.Continue]] = []
    first = None
    for i, stmt in enumerate(body):
        for node, inner, handler in _walk(stmt):
            if isinstance(node, ast.Call) and _is_step(model, node):
                steps.append(_pos(node))
                first = i if first is None else first
            if isinstance(node, ast.Continue) and inner is None and not handler:
                skips.append((i, node))
    guard = trailing_exit_guard(loop.node)
    late = [(i, e) for i, e in skips if any(p < _pos(e) for p in steps)]
    if first is None or not late:
        return SyncPoint(guard)
    i, e = min(late, key=lambda t: (t[0], _pos(t[1])))
    if guard is not None and body.index(guard) <= i:
        return SyncPoint(guard)  # the continue is in the exit checks that end the body
    if i > first:
        return SyncPoint(body[i], e)
    step_line = steps[0][0]
    return SyncPoint(
        guard,
        e,
        why_not=f"the `continue` on line {line_ref(e.lineno)} can end an iteration after its step (line "
        f"{line_ref(step_line)}) began, and no line of the loop body runs after the step on every "
        "iteration: those iterations skip the sync and the next graph spans them too",
    )
