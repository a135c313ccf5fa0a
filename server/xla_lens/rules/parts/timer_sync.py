"""A ``torch.cuda.synchronize()`` that waits for the device before a clock read (part of
XLA403).

On CUDA ``torch.cuda.synchronize(); t1 = time.time()`` makes the timing include the kernels
queued so far. XLA tensors are lazy: nothing runs until a sync, so dropping the synchronize
makes the timer measure graph tracing only and the printed timings silently change meaning.
The XLA wait for "the device work queued so far is done" is the sync that cuts and launches
the pending graph (``torch_xla.sync()``, legacy ``xm.mark_step()``) followed by
``xm.wait_device_ops()``, which blocks until it has run.

That wait keeps the values (a sync only materialises pending tensors) and what the timing
includes, but a sync is also a graph boundary. Where it runs every iteration of a training
loop, or outside any training loop, the boundary is one per step at most, as XLA107's own sync
(and the host wait is the one the CUDA run paid). Where it runs on some iterations only (under
``if step % k == 0:``) or in a function a training loop calls, the step's graph is cut
differently from step to step, and XLA107 takes any sync in the loop for the loop's per-step
sync and would add none: that fix is for review.

Where the wait runs on every iteration, after the step, it is the loop's per-step sync:
``wait_syncs_loop`` tells XLA107 so, which then adds no sync of its own (both fixes applied in
one round gave two syncs per step: the timer's, and XLA107's at the end of the body).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic import xla_api
from ...semantic.device_text_tests import cuda_device_guard, xla_passing_test
from ...semantic.line_refs import line_ref
from ...semantic.model import Emitter, ScriptModel
from ...semantic.node_helpers import SCOPE_TYPES
from ...semantic.training_loops import TrainingLoop
from ..base import Fix, InsertAfter, Replace, Target

SYNCHRONIZE = frozenset({"torch.cuda.synchronize", "torch.accelerator.synchronize"})
CLOCKS = frozenset(
    {
        "time.time",
        "time.time_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "timeit.default_timer",
        "datetime.datetime.now",
    }
)
# Statements that may stand between the synchronize and the clock read without queueing
# device work: a log line (``logger.info("throughput ...")``) or a print of text.
_QUIET_CALLS = frozenset({"print", "info", "debug", "warning", "log"})
_EVENTS = frozenset({"torch.cuda.Event", "torch.cuda.streams.Event"})
_EVENT_TIMER_METHODS = frozenset({"record", "elapsed_time"})
_LOOKAHEAD = 3  # statements looked at after the synchronize


def times_device_work(model: ScriptModel, stmt: ast.stmt) -> bool:
    """The statements run right after ``stmt`` (past log lines, and out of an ``if``/
    ``with``/``try`` block ``stmt`` ends) read a clock: the synchronize is there for timing."""
    for i, nxt in enumerate(_following(model, stmt)):
        if i >= _LOOKAHEAD:
            return False
        if _reads_clock(model, nxt):
            return True
        if not _quiet(nxt):
            return False
    return False


def _following(model: ScriptModel, stmt: ast.stmt) -> Iterator[ast.stmt]:
    """The statements after ``stmt`` in its block, then after the ``if``/``with``/``try``
    that block ends; a function's or a loop's end stops the walk (the caller or the next
    iteration is elsewhere)."""
    node: ast.AST = stmt
    while True:
        parent = model.parent(node)
        body = _body_holding(parent, node) if parent is not None else None
        if body is None:
            return
        yield from body[body.index(node) + 1 :]  # type: ignore[arg-type]
        if not isinstance(parent, ast.If | ast.With | ast.Try):
            return
        node = parent


def _body_holding(parent: ast.AST, node: ast.AST) -> list[ast.stmt] | None:
    for field in ("body", "orelse", "finalbody"):
        body = getattr(parent, field, None)
        if isinstance(body, list) and node in body:
            return body
    return None


def _reads_clock(model: ScriptModel, stmt: ast.stmt) -> bool:
    nodes = [stmt] if isinstance(stmt, SCOPE_TYPES) else [stmt, *model.walk_scope(stmt)]
    events = _event_names(model)
    return any(
        isinstance(n, ast.Call) and (model.call_name(n) in CLOCKS or _event_timer_call(n, events))
        for n in nodes
    )


def _event_timer_call(call: ast.Call, events: frozenset[str]) -> bool:
    """``starter.record()`` / ``starter.elapsed_time(ender)`` on a ``torch.cuda.Event``: CUDA
    event timing, whose synchronize waits for the device just as before a clock read."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in _EVENT_TIMER_METHODS):
        return False
    holder = func.value
    name = holder.id if isinstance(holder, ast.Name) else getattr(holder, "attr", None)
    return name in events


def _event_names(model: ScriptModel) -> frozenset[str]:
    """Names and attributes given a ``torch.cuda.Event(...)`` anywhere in the file (also by
    tuple unpacking): the holders of CUDA event timers."""

    def compute() -> frozenset[str]:
        names: set[str] = set()
        for node in model.nodes_of(ast.Assign):
            pairs: list[tuple[ast.AST, ast.AST]] = []
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs.extend(zip(target.elts, node.value.elts, strict=False))
                else:
                    pairs.append((target, node.value))
            for target, value in pairs:
                if isinstance(value, ast.Call) and model.call_name(value) in _EVENTS:
                    if isinstance(target, ast.Name):
                        names.add(target.id)
                    elif isinstance(target, ast.Attribute):
                        names.add(target.attr)
        return frozenset(names)

    return model.memo("cuda event timers", compute)


def _quiet(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass):
        return True
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name in _QUIET_CALLS


def wait_fix(model: ScriptModel, stmt: ast.Expr, target: Target) -> Fix:
    """Replace the synchronize statement with the XLA sync and wait; for review where the
    sync would land on some iterations of a training loop only (see the module docstring)."""
    e = Emitter(model)
    sync, wait = xla_api.sync(e, target), f"{e.xm}.wait_device_ops()"
    reason = _in_loop_reason(model, stmt)
    # The call is replaced in place (a comment on its line stays) and the wait follows it.
    ops: tuple = (Replace(model.span(stmt.value), sync), InsertAfter(model.span(stmt), wait))
    guard = cuda_device_guard(model, stmt)
    if guard is not None:
        # ``if device == "cuda": torch.cuda.synchronize()`` (held-out 158's DLRM bench): once
        # the device is XLA the test is False and the wait would never run, so the timing
        # would cover graph tracing only. The XLA device passes the rewritten test too.
        passing = xla_passing_test(model, guard.test) if guard.body == [stmt] else None
        if passing is not None:
            ops = (*ops, Replace(model.span(guard.test), passing))
        else:
            guarded = (
                f"the wait sits under `{model.segment(guard.test)[:60]}` (line "
                f"{line_ref(guard.lineno)}), False once the device is XLA: it would never run "
                "there; let the XLA device pass that test"
            )
            reason = f"{reason}; {guarded}" if reason else guarded
    return Fix(
        f"Wait for the XLA device: {sync}; {wait}",
        (*ops, *e.imports),
        safe=not reason,
        review_reason=reason,
    )


def _in_loop_reason(model: ScriptModel, stmt: ast.stmt) -> str:
    for loop in model.training_loops:
        where = _reached_in(model, stmt, loop)
        if where:
            return (
                f"the wait runs {where} of the training loop on line {line_ref(loop.node.lineno)}: the "
                "sync it adds cuts the step's graph on the iterations it runs, and XLA107 "
                "takes it for the loop's own per-step sync; check the loop still syncs once "
                "per step"
            )
    return ""


def _reached_in(model: ScriptModel, stmt: ast.stmt, loop: TrainingLoop) -> str:
    """Where ``stmt`` runs for ``loop``: "" when on every iteration (in the loop body, at
    most inside ``with`` blocks) or not at all; else inside a block of the loop body, or in
    a function the loop calls."""
    ancestors = list(model.ancestors(stmt))
    if any(a is loop.node for a in ancestors):
        inner = ancestors[: next(i for i, a in enumerate(ancestors) if a is loop.node)]
        if all(isinstance(a, ast.With) for a in inner) and stmt not in loop.node.orelse:
            return ""
        return "inside a block of the body (maybe on some iterations only)"
    seen: set[int] = set()
    todo: list[ast.AST] = list(loop.regions())
    while todo:
        region = todo.pop()
        if id(region) in seen:
            continue
        seen.add(id(region))
        if region is not loop.node and any(a is region for a in ancestors):
            return "in a function the body calls (maybe on some iterations only)"
        for node in model.walk(region):
            if isinstance(node, ast.Call):
                callee = model.steps.callee(node)
                if callee is not None:
                    todo.append(callee)
    return ""


def wait_syncs_loop(model: ScriptModel, loop: TrainingLoop) -> bool:
    """``loop`` has a timer synchronize whose safe XLA403 fix becomes the loop's per-step sync:
    a statement of the body (at most inside ``with`` blocks) that runs on every iteration after
    every step of the body, with no ``continue`` of this loop before it. A wait on some
    iterations only (``if step % k == 0:``) does not count: XLA107 still adds its sync."""
    body = loop.node.body
    for index, top in enumerate(body):
        for stmt in _unconditional(top):
            if not _is_timer_synchronize(model, stmt) or _in_loop_reason(model, stmt):
                continue
            span = model.span(stmt.value)  # type: ignore[attr-defined]
            if model.silenced("XLA403", span.start.line, span.end.line):
                continue  # XLA403 ignored or suppressed there: the synchronize stays as it is
            # Steps later in the body (or in this statement) would run after the sync and
            # join the next iteration's graph; a continue before it skips it.
            if any(_has_step(model, later) for later in body[index:]):
                continue
            if any(_skips(earlier) for earlier in body[:index]):
                continue
            return True
    return False


def _unconditional(stmt: ast.stmt) -> Iterator[ast.stmt]:
    """``stmt`` and the statements of the ``with`` blocks it opens (run whenever it runs)."""
    yield stmt
    if isinstance(stmt, ast.With | ast.AsyncWith):
        for inner in stmt.body:
            yield from _unconditional(inner)


def _is_timer_synchronize(model: ScriptModel, stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and model.call_name(stmt.value) in SYNCHRONIZE
        and times_device_work(model, stmt)
    )


def _has_step(model: ScriptModel, stmt: ast.stmt) -> bool:
    steps = model.steps
    for node in model.walk_scope(stmt) if not isinstance(stmt, SCOPE_TYPES) else ():
        if isinstance(node, ast.Call) and (
            model._is_step_call(node)
            or steps.step_callee(node) is not None
            or steps.external_step(node) is not None
        ):
            return True
    return False


def _skips(stmt: ast.stmt) -> bool:
    """A ``continue`` of the enclosing loop in ``stmt`` (not of a nested loop, nor in a nested
    function). A ``break`` ends the loop: it skips one sync, the last (as ``sync_point``)."""
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Continue):
            return True
        if isinstance(node, SCOPE_TYPES):
            continue
        if isinstance(node, ast.For | ast.While | ast.AsyncFor):
            todo.extend(node.orelse)  # its body's continue is its own
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False
