"""Whether deferring a text report to the step's sync would print it out of order: XLA401's
closure runs the report when the step ends, so a message that used to come out before
another print or log line of the same iteration would now come out after it
(held-out 42, hubert: "valid -- epoch ..." printed after "new best model found!" and
"Saved checkpoint"). wandb logs keep an order too: wandb drops a log to a step before its last
one. Reports to other sinks (TensorBoard scalars, tqdm postfixes) keep their step numbers
and need no order; the deferred report's own later passes are deferred
too, and closures run in the order they were added.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ...semantic.host_calls import is_builtin_call
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, TrainingLoop, method_name
from .closure_changes import rest_of_iteration
from .reporting_calls import is_reporting

# Reports that write lines of text to a stream a person reads in order.
TEXT_METHODS = frozenset(
    {"info", "debug", "warning", "error", "critical", "exception", "log", "master_print"}
)


# Writes of a line of text by qualified name (nerf-pytorch's ``tqdm.write(...)``, held-out 69).
TEXT_WRITES = frozenset(
    {"tqdm.tqdm.write", "tqdm.auto.tqdm.write", "sys.stdout.write", "sys.stderr.write"}
)
# Clocks: read inside a closure they tell the time the step's sync ran it.
CLOCKS = frozenset(
    {
        "time.time", "time.perf_counter", "time.monotonic", "time.process_time",
        "time.time_ns", "time.perf_counter_ns", "time.monotonic_ns", "timeit.default_timer",
        "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today",
    }
)  # fmt: skip


def clock_read(model: ScriptModel, stmt: ast.stmt) -> str | None:
    """Why deferring ``stmt`` would change a time it reports (None: it reads no clock)."""
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call) and model.call_name(n) in CLOCKS:
            return (
                f"it reads the clock (`{model.segment(n)}`) when the closure runs, at the "
                "step's sync: the time it reports would then include what runs after this line "
                "until the sync"
            )
    return None


def _text_report(model: ScriptModel, call: ast.Call) -> bool:
    if is_builtin_call(model, call, frozenset({"print"})):
        return True
    if model.call_name(call) in TEXT_WRITES:
        return True
    if call.args and isinstance(call.args[0], ast.Dict):
        return False  # ``run.log({...}, step=...)``: a metrics tracker, not a line of text
    return method_name(call) in TEXT_METHODS and is_reporting(model, call)


def _exclusive(model: ScriptModel, stmt: ast.stmt, node: ast.AST) -> bool:
    """``node`` sits in another branch of an ``if`` that holds ``stmt``: never the same pass."""
    for a in model.ancestors(stmt):
        if isinstance(a, ast.If):
            mine = any(s is stmt or _within(model, stmt, s) for s in a.body)
            if mine and any(s is node or _within(model, node, s) for s in a.orelse):
                return True
    return False


def _within(model: ScriptModel, node: ast.AST, outer: ast.AST) -> bool:
    return any(a is outer for a in model.ancestors(node))


def reported_out_of_order(
    model: ScriptModel,
    loop: TrainingLoop,
    stmt: ast.Expr,
    deferred: Callable[[ast.stmt], bool],
) -> str | None:
    """Why the deferred text report ``stmt`` would come out after another message of the
    same iteration (None: it is no text report, or nothing later in the iteration prints at
    once). ``deferred``: whether a later statement is itself moved, safely, into a closure
    (closures run in the order they were added, so the two keep theirs)."""
    call = stmt.value
    if not isinstance(call, ast.Call):
        return None
    if _text_report(model, call):
        same_sink = _text_report
        why = (
            "prints later in the same iteration but runs at once: the deferred message would "
            "come out after it, out of order"
        )
    elif _wandb_log(model, call):
        # wandb keeps one step counter: a log to a step before the last one is dropped, and
        # one with no step= takes the next step (held-out 81, AdaBins: the deferred train
        # loss at step=step came after the validation log at the same iteration's step=step).
        same_sink = _wandb_log
        why = (
            "logs to wandb later in the same iteration but runs at once: the deferred log "
            "would reach wandb after it, and wandb drops a log to an earlier step (or gives "
            "one without step= the next step)"
        )
    else:
        return None
    for node in rest_of_iteration(model, loop, stmt):
        if node is stmt or _exclusive(model, stmt, node):
            continue
        for inner in ast.walk(node):
            if not (isinstance(inner, ast.Call) and same_sink(model, inner)):
                continue
            holder = model.enclosing_statement(inner)
            if isinstance(holder, ast.Expr) and holder.value is inner and deferred(holder):
                continue
            return f"line {line_ref(inner.lineno)} (`{model.segment(inner)}`) {why}"
    return None


WANDB_LOGS = frozenset({"wandb.log", "wandb.sdk.wandb_run.Run.log"})


def _wandb_log(model: ScriptModel, call: ast.Call) -> bool:
    """``wandb.log(...)``, or ``run.log({...})`` on a name bound to ``wandb.init(...)``."""
    if model.call_name(call) in WANDB_LOGS:
        return True
    func = call.func
    if not (
        isinstance(func, ast.Attribute) and func.attr == "log" and isinstance(func.value, ast.Name)
    ):
        return False
    values = model.assigned_from(func.value.id)
    return bool(values) and all(
        isinstance(v, ast.Call) and model.call_name(v) == "wandb.init" for v in values
    )


__all__ = ["clock_read", "reported_out_of_order"]
