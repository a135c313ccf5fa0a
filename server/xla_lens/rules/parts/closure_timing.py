"""When a report wrapped in ``xm.add_step_closure`` runs: a step closure runs only at the next
sync, so XLA401's fix is safe only where a sync always follows the report in the same step
(the loop's own sync, its MpDeviceLoader, or the sync XLA107's safe fix adds) and nothing
between them can end the iteration or close what the report uses. Part of XLA401."""

from __future__ import annotations

import ast
from bisect import bisect_left
from types import ModuleType

from ...semantic.line_refs import line_ref
from ...semantic.loaders import Source, classify, loop_source
from ...semantic.loop_syncs import is_sync_call, loop_syncs
from ...semantic.model import SCOPE_TYPES, ScriptModel, TrainingLoop, method_name
from ...semantic.params import parameter_of
from ...semantic.prepared_loaders import Feed, prepared_feed
from .. import xla106_device_loader, xla107_mark_step
from ..base import Pos, Span, Target
from ..xla106_device_loader import will_wrap
from .final_fixes import applied_spans, final_findings
from .sync_point import sync_point

EXITS = frozenset({"sys.exit", "os._exit", "exit", "quit"})
REVIEW_LOST = (
    "a step closure runs at the next sync; {why}, so the deferred {what} may never run or "
    "run a step late"
)
NEVER_RUNS = "a step closure runs only at a sync, so this would never run"
NEVER_SYNCS = "nothing in this loop syncs ({why}): " + NEVER_RUNS


def after(node: ast.AST, stmt: ast.stmt) -> bool:
    return (node.lineno, node.col_offset) > (
        stmt.end_lineno or stmt.lineno,
        stmt.end_col_offset or 0,
    )


def ends_iteration_early(
    model: ScriptModel,
    region: ast.AST,
    stmt: ast.stmt,
    sync_line: int | None = None,
    returns_to_sync: bool = False,
) -> str | None:
    """A ``break``/``continue``/``return``/``raise``/``sys.exit()`` after ``stmt`` in the
    same iteration (and before ``sync_line``, where XLA107 puts the sync): it can skip the
    sync that would run the closure. ``returns_to_sync``: ``region`` is a step function with
    no sync of its own, so a ``return`` goes back to the loop, whose sync still runs."""
    for node in _statements_and_calls(model, region):
        if not after(node, stmt):
            continue
        if sync_line is not None and node.lineno >= sync_line:
            continue
        if returns_to_sync and isinstance(node, ast.Return):
            continue
        if isinstance(node, ast.Break | ast.Continue | ast.Return | ast.Raise):
            return f"a `{type(node).__name__.lower()}` follows on line {line_ref(node.lineno)}"
        if isinstance(node, ast.Call):
            name = model.call_name(node) or (
                node.func.id if isinstance(node.func, ast.Name) else None
            )
            if name in EXITS:
                return f"`{name}()` follows on line {line_ref(node.lineno)}"
    return None


def region_statements(model: ScriptModel, region: ast.AST) -> tuple[ast.stmt, ...]:
    """The statements of ``model.walk_scope(region)``, in its order, once per parse: every
    report in a loop asks about the same loop (the model caches only frames' walks)."""
    return model.memo(
        (region_statements, region),
        lambda: tuple(n for n in model.walk_scope(region) if isinstance(n, ast.stmt)),
    )


def _statements_and_calls(model: ScriptModel, region: ast.AST) -> tuple[ast.AST, ...]:
    return model.memo(
        (_statements_and_calls, region),
        lambda: tuple(n for n in model.walk_scope(region) if isinstance(n, ast.stmt | ast.Call)),
    )


def _loop_syncs(model: ScriptModel, loop: TrainingLoop) -> list[ast.Call]:
    """The sync calls in the loop (nested functions too) and in its step functions."""

    def compute() -> list[ast.Call]:
        return [
            n
            for region in loop.regions()
            for n in (model.walk(region) if region is loop.node else model.walk_scope(region))
            if isinstance(n, ast.Call) and is_sync_call(model, n)
        ]

    return model.memo((_loop_syncs, *loop.regions()), compute)


def accelerate_leaves_as_is(model: ScriptModel, expr: ast.AST | None) -> str | None:
    """``*_, loader = accelerator.prepare(..., cycle(DataLoader(ds)))``: accelerate wraps only a
    DataLoader (in an MpDeviceLoader on XLA) and hands anything else back as it is, which
    never syncs. The argument's text when it is not provably a DataLoader, else None."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "iter":
        expr = expr.args[0] if len(expr.args) == 1 else None
    if not isinstance(expr, ast.Name):
        return None
    if not any(t.split(".")[0] == "accelerate" for t in model.imports.values()):
        return None
    for a in model.nodes_of(ast.Assign):
        assert isinstance(a, ast.Assign)
        call = a.value
        if not (isinstance(call, ast.Call) and method_name(call) == "prepare"):
            continue
        for target in a.targets:
            names = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
            for i, n in enumerate(names):
                if not (isinstance(n, ast.Name) and n.id == expr.id):
                    continue
                args = call.args
                if i >= len(args) or any(isinstance(x, ast.Starred) for x in args[: i + 1]):
                    return code_text(model, call)
                odd = not_a_loader(model, args[i])
                if odd is not None:
                    return odd
    return None


def not_a_loader(model: ScriptModel, node: ast.expr) -> str | None:
    """The text of what ``node`` may be other than a DataLoader (None: provably a loader)."""
    known = {Source.PLAIN, Source.XLA}
    if not isinstance(node, ast.Name) or parameter_of(model, node) is not None:
        return None if classify(model, node) in known else code_text(model, node)
    # Not ``classify``: it takes any name accelerate prepares for an XLA loader.
    values = [
        v
        for v in model.assigned_from(node.id)
        if not (isinstance(v, ast.Call) and method_name(v) == "prepare")
    ]
    if not values:
        return f"`{node.id}`"
    odd = next((v for v in values if classify(model, v) not in known), None)
    return None if odd is None else f"`{node.id}` ({code_text(model, odd)})"


def code_text(model: ScriptModel, node: ast.AST) -> str:
    text = " ".join(model.segment(node).split())
    return f"`{text if len(text) <= 60 else text[:57] + '...'}`"


def applied_at(model: ScriptModel, rule: ModuleType, target: Target) -> frozenset[Span]:
    """Spans of ``rule``'s findings whose safe fix Convert applies: not silenced by the user,
    not held back by the engine's launch safety (``final_fixes``)."""
    return applied_spans(model, rule.CODE, rule.check, target)


def _applied_by_start(model: ScriptModel, rule: ModuleType, target: Target) -> list[Span]:
    """``applied_at`` sorted by start, once per parse: each loop looks up its own range
    instead of scanning every applied fix of the script."""
    return model.memo(
        (_applied_by_start, rule.__name__, target),
        lambda: sorted(applied_at(model, rule, target), key=lambda s: s.start),
    )


def _applied_within(model: ScriptModel, rule: ModuleType, target: Target, outer: Span) -> bool:
    """Whether a span of ``applied_at`` lies within ``outer`` (``outer.contains``)."""
    spans = _applied_by_start(model, rule, target)
    # Only spans starting at or after ``outer.start`` (and not past its end) can lie within.
    i = bisect_left(spans, outer.start, key=lambda s: s.start)
    while i < len(spans) and spans[i].start <= outer.end:
        if outer.contains(spans[i]):
            return True
        i += 1
    return False


def _applied_starts(model: ScriptModel, rule: ModuleType, target: Target) -> frozenset[Pos]:
    return model.memo(
        (_applied_starts, rule.__name__, target),
        lambda: frozenset(s.start for s in applied_at(model, rule, target)),
    )


def sync_plan(model: ScriptModel, loop: TrainingLoop, target: Target) -> tuple[str, str]:
    """How this loop syncs after the safe fixes: ``fed`` (its loader marks every step),
    ``calls`` (a sync it already makes, here or in a helper), ``added`` (XLA107's fix),
    ``next_fetch`` (``next()`` on accelerate's prepared loader: the sync comes with the next
    batch, none after the last step), or ``never`` with why."""
    # Asked for every report in the loop: worked out once per loop. Keyed by the loop's id,
    # with the loop kept in the value (alive, so its id is never another loop's).
    kept, plan = model.memo(
        (sync_plan, id(loop), target), lambda: (loop, _sync_plan(model, loop, target))
    )
    return plan if kept is loop else _sync_plan(model, loop, target)


def _sync_plan(model: ScriptModel, loop: TrainingLoop, target: Target) -> tuple[str, str]:
    source, expr = loop_source(model, loop)
    as_is = accelerate_leaves_as_is(model, expr) if source is Source.XLA else None
    loop_span = model.span(loop.node)
    wrapped = will_wrap(model, loop.node, target) and _applied_within(
        model, xla106_device_loader, target, loop_span
    )
    feed = prepared_feed(model, loop)
    if (source is Source.XLA and as_is is None) or wrapped or feed is Feed.ITERATES:
        return "fed", ""
    if loop_syncs(model, loop):
        return "calls", ""
    if loop_span.start in _applied_starts(model, xla107_mark_step, target):
        return "added", ""
    if feed is Feed.DRAWS:
        return "next_fetch", ""
    if as_is is not None:
        why = f"accelerate's `prepare` hands {as_is} back as it is, not an MpDeviceLoader"
    else:
        why = "no sync call, no MpDeviceLoader, and no safe XLA106/XLA107 fix adds one"
    return "never", why


def sync_offered(model: ScriptModel, loop: TrainingLoop, target: Target) -> bool:
    """A fix of XLA107 (its sync) or XLA106 (its loader wrap), safe or for review, would
    sync this loop: a step closure may run once the reviewer accepts it."""
    spans = model.memo(
        ("closure_timing offered syncs", target),
        lambda: tuple(
            f.span
            for rule in (xla107_mark_step, xla106_device_loader)
            for f in final_findings(model, rule.CODE, rule.check, target)
            if f.fix is not None
        ),
    )
    loop_span = model.span(loop.node)
    return any(loop_span.contains(s) for s in spans)


def sync_runs_after(
    model: ScriptModel, loop: TrainingLoop, stmt: ast.stmt, target: Target
) -> str | None:
    """Why a closure added at ``stmt`` might not run at the end of this step (None: it runs)."""
    plan, why = sync_plan(model, loop, target)
    if plan == "never":
        return NEVER_SYNCS.format(why=why)
    if plan == "next_fetch":
        why = (
            "the loop syncs only when it fetches the next batch from accelerate's prepared "
            "loader, and nothing syncs after the last step"
        )
        return REVIEW_LOST.format(why=why, what="report")
    fed = plan == "fed"
    syncs = _loop_syncs(model, loop)
    lost = REVIEW_LOST.format
    # With no sync yet, XLA107 adds one where every iteration reaches it (sync_point): before
    # the exit checks that end the loop body, or before a continue that would skip it.
    guard = sync_point(model, loop).before if plan == "added" and not syncs else None
    if guard is not None and not after(guard, stmt):
        why = f"the step's sync goes before the exit check on line {line_ref(guard.lineno)}, before it"
        return lost(why=why, what="report")
    for region in loop.regions():
        if any(a is region for a in model.ancestors(stmt)):
            sync_line = guard.lineno if guard is not None and region is loop.node else None
            if sync_line is None:
                # An exit after a sync that always follows the report loses nothing.
                sure = [n for n in syncs if _always_follows(model, n, stmt, region)]
                sync_line = min((n.lineno for n in sure), default=None)
            own_sync = any(any(a is region for a in model.ancestors(n)) for n in syncs)
            back = region is not loop.node and not own_sync
            why = ends_iteration_early(model, region, stmt, sync_line, returns_to_sync=back)
            if why is None and region is not loop.node:
                why = _exit_after_call(model, loop, region, guard, syncs)
            if why is not None:
                return lost(why=why, what="report")
    if fed:
        return None  # the loader marks the step before each batch and after the last one
    if not syncs or any(after(n, stmt) for n in syncs):
        return None  # a sync follows (in a helper it calls, or XLA107 adds one at the end)
    return lost(
        why=f"the loop's only sync (line {line_ref(syncs[0].lineno)}) comes before it",
        what="report",
    )


def _exit_after_call(
    model: ScriptModel,
    loop: TrainingLoop,
    function: ast.AST,
    guard: ast.stmt | None,
    syncs: list[ast.Call],
) -> str | None:
    """A report in a step function the loop calls runs its closure at the loop's sync: an exit
    in the loop's body after the call (pyGAT's early stopping ``if bad_counter == patience:
    break`` after ``train(epoch)``, held-out 51) skips that sync on the last iteration, and
    nothing runs the closure afterwards."""
    name = getattr(function, "name", None)
    calls = [
        n
        for n in model.walk(loop.node)
        if isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Name) and n.func.id == name)
            or (isinstance(n.func, ast.Attribute) and n.func.attr == name)
        )
    ]
    body = getattr(loop.node, "body", [])
    starts = [s for s in (model.enclosing_statement(c) for c in calls) if s is not None]
    if not starts and body:
        starts = [body[0]]  # called some other way: anything in the body may follow it
    for start in starts:
        sync_line = guard.lineno if guard is not None else None
        if sync_line is None:
            sure = [n for n in syncs if _always_follows(model, n, start, loop.node)]
            sync_line = min((n.lineno for n in sure), default=None)
        why = ends_iteration_early(model, loop.node, start, sync_line)
        if why is not None:
            return f"{why}, in the loop that calls `{name}()`"
    return None


def _always_follows(model: ScriptModel, sync: ast.Call, stmt: ast.stmt, region: ast.AST) -> bool:
    """``sync`` is a statement of its own later in a block that holds ``stmt`` (or a block
    around it, within ``region``): once ``stmt`` has run, it runs unless the iteration ends."""
    sync_stmt = model.parent(sync)
    if not (isinstance(sync_stmt, ast.Expr) and sync_stmt.value is sync):
        return False
    node: ast.AST = stmt
    while node is not region:
        owner = model.parent(node)
        if owner is None:
            return False
        for field in ("body", "orelse", "finalbody"):
            block = getattr(owner, field, None)
            if isinstance(block, list) and node in block and sync_stmt in block:
                return block.index(sync_stmt) > block.index(node)
        node = owner
    return False


def closed_resource(model: ScriptModel, stmt: ast.stmt) -> str | None:
    """``with open(p) as f: f.write(...)``: deferred past the ``with``, the report would run
    on a closed resource (``ValueError: I/O operation on closed file``)."""
    used = {n.id for n in model.walk(stmt) if isinstance(n, ast.Name)}
    for a in model.ancestors(stmt):
        if isinstance(a, SCOPE_TYPES):
            break
        if isinstance(a, ast.With | ast.AsyncWith):
            for item in a.items:
                bound = item.optional_vars
                names = (
                    {n.id for n in model.walk(bound) if isinstance(n, ast.Name)} if bound else set()
                )
                if names & used:
                    return (
                        f"it uses `{', '.join(sorted(names & used))}` of the `with` on line "
                        f"{line_ref(a.lineno)}, which is closed by the time the closure runs"
                    )
    return _closed_after(model, stmt, used)


def _closed_after(model: ScriptModel, stmt: ast.stmt, used: set[str]) -> str | None:
    """``record.write(...)`` then ``record.close()`` in the same block (MCD_DA's solver,
    held-out 89): deferred, the write runs on the closed file."""
    parent = model.parent(stmt)
    block = next(
        (
            b
            for field in ("body", "orelse", "finalbody")
            if isinstance(b := getattr(parent, field, None), list) and stmt in b
        ),
        None,
    )
    if block is None:
        return None
    for later in block[block.index(stmt) + 1 :]:
        for n in model.walk(later):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "close"
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id in used
            ):
                return (
                    f"it uses `{n.func.value.id}`, which line {line_ref(n.lineno)} closes "
                    "before the closure runs"
                )
    return None
