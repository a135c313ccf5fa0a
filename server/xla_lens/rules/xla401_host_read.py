"""XLA401: the training loop reads a device tensor on the host (an extra graph run per step)."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from types import ModuleType

from ..semantic.host_values import HostValues, host_values
from ..semantic.loaders import Source, classify, loop_source, loop_syncs
from ..semantic.model import (
    SCOPE_TYPES,
    SYNC_CALLS,
    Emitter,
    ScriptModel,
    TrainingLoop,
    method_name,
    receiver,
)
from ..semantic.params import parameter_of
from ..semantic.steps import trailing_exit_guard
from ..semantic.tensors import HOST_METHODS, loop_nodes, scope_of
from . import xla106_device_loader, xla107_mark_step
from .base import (
    Category,
    EditOp,
    Finding,
    Fix,
    LazyOps,
    ReplaceStatement,
    Rule,
    RuleContext,
    Severity,
    Span,
    Target,
)
from .xla106_device_loader import will_wrap

CODE = "XLA401"
STEP_CLOSURE = "torch_xla.core.xla_model.add_step_closure"
CONVERSIONS = frozenset({"float", "int", "bool"})
# Calls whose only job is to report a value: deferring them to the end of the step keeps
# the program's meaning, so their fix is safe.
REPORTING_METHODS = frozenset(
    {
        "info",
        "debug",
        "warning",
        "error",
        "critical",
        "exception",
        "log",
        "write",
        "set_postfix",
        "set_postfix_str",
        "set_description",
        "add_scalar",
        "add_scalars",
        "master_print",
    }
)
BUILTIN_NAMES = frozenset(dir(builtins))
MANUAL = (
    "Keep the value on the device and read it once after the loop (e.g. "
    "`total_loss += loss.detach()`, then `total_loss.item()` after the epoch), or move the "
    "read into `xm.add_step_closure(fn, args=(...))`, which runs after the step's graph."
)


def _is_builtin_call(model: ScriptModel, call: ast.Call, names: frozenset[str]) -> bool:
    f = call.func
    return (
        isinstance(f, ast.Name)
        and f.id in names
        and model.qualname(f) is None
        and f.id not in model.functions
    )


def _outer_host_read(model: ScriptModel, call: ast.Call) -> bool:
    """Whether ``call`` is the receiver of a later host read (``t.cpu().numpy()``)."""
    cur: ast.AST = call
    while True:
        attr = model.parent(cur)
        outer = model.parent(attr) if isinstance(attr, ast.Attribute) else None
        if not (isinstance(outer, ast.Call) and outer.func is attr):
            return False
        if method_name(outer) in HOST_METHODS:
            return True
        cur = outer


def _is_reporting(model: ScriptModel, call: ast.Call) -> bool:
    return _is_builtin_call(model, call, frozenset({"print"})) or (
        method_name(call) in REPORTING_METHODS
    )


def _pending(values: HostValues, expr: ast.AST) -> bool:
    """A device tensor whose value is not computed yet: not a host value, and not read as it
    is right after the script's own sync (which has just computed it)."""
    return values.is_device(expr) and not values.materialized(expr)


def _reads(model: ScriptModel, values: HostValues, node: ast.AST) -> str | None:
    """What kind of host read ``node`` is, or None."""
    if isinstance(node, ast.Call):
        recv = receiver(node)
        if method_name(node) in HOST_METHODS and recv is not None:
            if _outer_host_read(model, node):
                return None
            # ``t.cpu().numpy()`` reads ``t``: judge the value the chain starts from.
            while isinstance(recv, ast.Call) and method_name(recv) in HOST_METHODS:
                recv = receiver(recv)
            if recv is not None and (values.is_host(recv) or values.materialized(recv)):
                return None
            return f".{method_name(node)}()"
        if (
            _is_builtin_call(model, node, CONVERSIONS)
            and len(node.args) == 1
            and _pending(values, node.args[0])
        ):
            return f"{node.func.id}(tensor)"  # type: ignore[attr-defined]
        if _is_reporting(model, node):
            args = [*node.args, *(kw.value for kw in node.keywords)]
            if any(_pending(values, v) for v in args if not isinstance(v, ast.Starred)):
                return "passing a tensor to a logging call"
    if isinstance(node, ast.JoinedStr) and any(
        isinstance(v, ast.FormattedValue) and _pending(values, v.value) for v in node.values
    ):
        return "formatting a tensor"
    return None


def _closure_functions(model: ScriptModel) -> set[str]:
    """Functions the script already hands to ``add_step_closure``."""
    return {
        c.args[0].id
        for c in model.calls_to(STEP_CLOSURE)
        if c.args and isinstance(c.args[0], ast.Name)
    }


def _module_level_names(model: ScriptModel) -> frozenset[str]:
    return model.memo(_module_level_names, lambda: frozenset(_top_level_definitions(model)))


def _top_level_definitions(model: ScriptModel) -> set[str]:
    out = set()
    for stmt in model.tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(stmt.name)
    return out


def _bound_in(model: ScriptModel, root: ast.AST) -> set[str]:
    out = set()
    for n in model.walk(root):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


def _bound_in_scope(model: ScriptModel, scope: ast.AST) -> frozenset[str]:
    # One walk per function, however many of its statements need a closure.
    return model.memo((_bound_in_scope, scope), lambda: frozenset(_bound_in(model, scope)))


def free_names(model: ScriptModel, stmt: ast.stmt) -> list[str]:
    """Local names ``stmt`` reads, in order of first appearance (the closure's arguments)."""
    scope = scope_of(model, stmt)
    local = set(_bound_in_scope(model, scope)) if scope is not model.tree else set()
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        local |= {a.arg for a in model.walk(scope.args) if isinstance(a, ast.arg)}
    skip = _bound_in(model, stmt) | _module_level_names(model) | set(model.imports)
    if scope is not model.tree:
        # Globals are read when the closure runs; only the frame's own names need binding now.
        skip |= {n for n in model.assignments if n not in local}
    names: list[str] = []
    loads = sorted(
        (n for n in model.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for n in loads:
        if n.id in skip or n.id in names or (n.id in BUILTIN_NAMES and n.id not in local):
            continue
        names.append(n.id)
    return names


EXITS = frozenset({"sys.exit", "os._exit", "exit", "quit"})
REVIEW_LOST = (
    "a step closure runs at the next sync; {why}, so the deferred {what} may never run or "
    "run a step late"
)
NEVER_SYNCS = (
    "nothing in this loop syncs ({why}): a step closure runs only at a sync, so this would "
    "never run"
)


def _after(node: ast.AST, stmt: ast.stmt) -> bool:
    return (node.lineno, node.col_offset) > (
        stmt.end_lineno or stmt.lineno,
        stmt.end_col_offset or 0,
    )


def _ends_iteration_early(
    model: ScriptModel, region: ast.AST, stmt: ast.stmt, sync_line: int | None = None
) -> str | None:
    """A ``break``/``continue``/``return``/``raise``/``sys.exit()`` after ``stmt`` in the
    same iteration (and before ``sync_line``, where XLA107 puts the sync): it can skip the
    sync that would run the closure."""
    for node in model.walk_scope(region):
        if not isinstance(node, ast.stmt | ast.Call) or not _after(node, stmt):
            continue
        if sync_line is not None and node.lineno >= sync_line:
            continue
        if isinstance(node, ast.Break | ast.Continue | ast.Return | ast.Raise):
            return f"a `{type(node).__name__.lower()}` follows on line {node.lineno}"
        if isinstance(node, ast.Call):
            name = model.call_name(node) or (
                node.func.id if isinstance(node.func, ast.Name) else None
            )
            if name in EXITS:
                return f"`{name}()` follows on line {node.lineno}"
    return None


def _accelerate_leaves_as_is(model: ScriptModel, expr: ast.AST | None) -> str | None:
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
                    return _code(model, call)
                odd = _not_a_loader(model, args[i])
                if odd is not None:
                    return odd
    return None


def _not_a_loader(model: ScriptModel, node: ast.expr) -> str | None:
    """The text of what ``node`` may be other than a DataLoader (None: provably a loader)."""
    known = {Source.PLAIN, Source.XLA}
    if not isinstance(node, ast.Name) or parameter_of(model, node) is not None:
        return None if classify(model, node) in known else _code(model, node)
    # Not ``classify``: it takes any name accelerate prepares for an XLA loader.
    values = [
        v
        for v in model.assigned_from(node.id)
        if not (isinstance(v, ast.Call) and method_name(v) == "prepare")
    ]
    if not values:
        return f"`{node.id}`"
    odd = next((v for v in values if classify(model, v) not in known), None)
    return None if odd is None else f"`{node.id}` ({_code(model, odd)})"


def _code(model: ScriptModel, node: ast.AST) -> str:
    text = " ".join(model.segment(node).split())
    return f"`{text if len(text) <= 60 else text[:57] + '...'}`"


def _applied_at(model: ScriptModel, rule: ModuleType, target: Target) -> frozenset[Span]:
    """Spans of ``rule``'s findings whose safe fix is applied (not silenced by the user)."""

    def compute() -> frozenset[Span]:
        out = set()
        for f in rule.check(model, RuleContext(target)):
            if f.fix is None or not f.fix.safe:
                continue
            if not model.silenced(f.code, f.span.start.line, f.span.end.line):
                out.add(f.span)
        return frozenset(out)

    return model.memo((_applied_at, rule.__name__, target), compute)


def _sync_plan(model: ScriptModel, loop: TrainingLoop, target: Target) -> tuple[str, str]:
    """How this loop syncs after the safe fixes: ``fed`` (its loader marks every step),
    ``calls`` (a sync it already makes, here or in a helper), ``added`` (XLA107's fix),
    or ``never`` with why."""
    source, expr = loop_source(model, loop)
    as_is = _accelerate_leaves_as_is(model, expr) if source is Source.XLA else None
    loop_span = model.span(loop.node)
    wrapped = will_wrap(model, loop.node, target) and any(
        loop_span.contains(span) for span in _applied_at(model, xla106_device_loader, target)
    )
    if (source is Source.XLA and as_is is None) or wrapped:
        return "fed", ""
    if loop_syncs(model, loop):
        return "calls", ""
    if any(span.start == loop_span.start for span in _applied_at(model, xla107_mark_step, target)):
        return "added", ""
    if as_is is not None:
        why = f"accelerate's `prepare` hands {as_is} back as it is, not an MpDeviceLoader"
    else:
        why = "no sync call, no MpDeviceLoader, and no safe XLA106/XLA107 fix adds one"
    return "never", why


def _sync_runs_after(
    model: ScriptModel, loop: TrainingLoop, stmt: ast.stmt, target: Target
) -> str | None:
    """Why a closure added at ``stmt`` might not run at the end of this step (None: it runs)."""
    plan, why = _sync_plan(model, loop, target)
    if plan == "never":
        return NEVER_SYNCS.format(why=why)
    fed = plan == "fed"
    syncs = [
        n
        for region in loop.regions()
        for n in (model.walk(region) if region is loop.node else model.walk_scope(region))
        if isinstance(n, ast.Call) and model.call_name(n) in SYNC_CALLS
    ]
    lost = REVIEW_LOST.format
    # With no sync yet, XLA107 adds one before the exit checks that end the loop body.
    guard = trailing_exit_guard(loop.node) if plan == "added" and not syncs else None
    if guard is not None and not _after(guard, stmt):
        why = f"the step's sync goes before the exit check on line {guard.lineno}, before it"
        return lost(why=why, what="report")
    for region in loop.regions():
        if any(a is region for a in model.ancestors(stmt)):
            sync_line = guard.lineno if guard is not None and region is loop.node else None
            why = _ends_iteration_early(model, region, stmt, sync_line)
            if why is not None:
                return lost(why=why, what="report")
    if fed:
        return None  # the loader marks the step before each batch and after the last one
    if not syncs or any(_after(n, stmt) for n in syncs):
        return None  # a sync follows (in a helper it calls, or XLA107 adds one at the end)
    return lost(why=f"the loop's only sync (line {syncs[0].lineno}) comes before it", what="report")


def _closure_ops(model: ScriptModel, stmt: ast.Expr) -> tuple[EditOp, ...]:
    e = Emitter(model)
    names = free_names(model, stmt)
    body = model.segment(stmt.value)
    if names:
        params = ", ".join(names)
        args = params + ("," if len(names) == 1 else "")
        code = f"{e.xm}.add_step_closure(lambda {params}: {body}, args=({args}))"
    else:
        code = f"{e.xm}.add_step_closure(lambda: {body})"
    return (ReplaceStatement(model.span(stmt), code), *e.imports)


def _closed_resource(model: ScriptModel, stmt: ast.stmt) -> str | None:
    """``with open(p) as f: f.write(...)``: deferred past the ``with``, the report would run
    on a closed resource (``ValueError: I/O operation on closed file``)."""
    used = {n.id for n in model.walk(stmt) if isinstance(n, ast.Name)}
    for a in model.ancestors(stmt):
        if isinstance(a, SCOPE_TYPES):
            return None
        if isinstance(a, ast.With | ast.AsyncWith):
            for item in a.items:
                bound = item.optional_vars
                names = (
                    {n.id for n in model.walk(bound) if isinstance(n, ast.Name)} if bound else set()
                )
                if names & used:
                    return (
                        f"it uses `{', '.join(sorted(names & used))}` of the `with` on line "
                        f"{a.lineno}, which is closed by the time the closure runs"
                    )
    return None


def _closure_fix(model: ScriptModel, loop: TrainingLoop, stmt: ast.Expr, target: Target) -> Fix:
    reporting = isinstance(stmt.value, ast.Call) and _is_reporting(model, stmt.value)
    title = "Read it after the step: wrap in xm.add_step_closure"
    reason = ""
    if not reporting:
        reason = (
            "the call runs later, after the step: code that uses its effect in this step changes"
        )
    else:
        closed = _closed_resource(model, stmt)
        if closed is not None:
            reason = REVIEW_LOST.format(why=closed, what="report")
        else:
            reason = _sync_runs_after(model, loop, stmt, target) or ""
    return Fix(
        title,
        # Free names and the closure's text only matter when the fix is used.
        LazyOps(lambda: _closure_ops(model, stmt)),
        safe=not reason,
        review_reason=reason,
    )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    values = host_values(model)
    closures = _closure_functions(model)
    for loop, node in loop_nodes(model):
        scope = scope_of(model, node)
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and scope.name in closures:
            continue
        what = _reads(model, values, node)
        if what is None:
            continue
        stmt = model.enclosing_statement(node)
        message = (
            f"{what} reads a device tensor on the host inside the training loop: XLA must "
            "compile and run the pending graph right here, an extra sync every step"
        )
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            fix = _closure_fix(model, loop, stmt, ctx.target)
            yield Finding(CODE, message, model.span(node), Severity.WARNING, fix=fix)
        else:
            yield Finding(CODE, message, model.span(node), Severity.WARNING, manual=MANUAL)


def _hover(api: str) -> str:
    return f"""\
**XLA401 · `{api}` in the training loop**

XLA tensors are lazy: reading one on the host (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`,
`float(t)`, `print(t)`, an f-string) compiles and runs the pending graph mid-step.

Fix: report from a step closure, which runs after the step's graph has executed:
`xm.add_step_closure(lambda loss: print(loss.item()), args=(loss,))` (pass the tensors as
`args`, so the closure sees this step's values). For running totals keep the sum on the
device (`total += loss.detach()`) and read it once after the loop.
`xm.add_step_closure` is the same on the legacy (torch_xla 1.13) and modern targets.
"""


RULE = Rule(
    code=CODE,
    name="host-read",
    category=Category.PERFORMANCE,
    summary="Host reads of tensors in the training loop (.item(), print(loss), float(t)) → xm.add_step_closure",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        ".item": _hover(".item()"),
        ".tolist": _hover(".tolist()"),
        ".cpu": _hover(".cpu()"),
        ".numpy": _hover(".numpy()"),
        STEP_CLOSURE: _hover("xm.add_step_closure"),
    },
)
