"""XLA401: the block a host read sits in when it runs every few steps, not every step: under
``if step % log_every == 0:`` (a ``%`` in the test, or a name bound to one) or under a clock
(``if now - last_log > 60:``, a ``time.time()`` read in the test or a name bound to one:
held-out 14, vicreg's once-a-minute log) or on the last batch only (``if i == len(loader) - 1:``,
yolov5's end-of-epoch validation, held-out 38), or at one fixed step only (``if step == 0:``, ``if batch_idx == 1:``)."""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel
from ...semantic.training_loops import TrainingLoop


def periodic_block(model: ScriptModel, loop: TrainingLoop, node: ast.AST) -> ast.If | None:
    """The ``if step % log_every == 0:`` (a test with a ``%``, or a name bound to one) the
    read sits under inside the loop: it runs every few steps, not every step."""
    child = node
    flags: list[ast.If] = []  # ``if <name>:`` passed on the way out
    for a in model.ancestors(node):
        if a is loop.node:
            return None
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef):
            if any(loop.node is b for b in model.ancestors(a)) or any(
                a is b for b in model.ancestors(loop.node)
            ):
                return None  # the loop's own function, or one defined inside the loop
            return next(
                (found for f in flags if (found := _periodic_parameter(model, a, f)) is not None),
                None,
            )
        if isinstance(a, ast.If) and child in a.body and isinstance(a.test, ast.Name):
            flags.append(a)
        if (
            isinstance(a, ast.If)
            and child in a.body
            and (
                _has_modulo(model, a.test)
                or _reads_clock(model, a.test)
                or _last_iteration(a.test)
                or _first_iteration(a.test)
            )
        ):
            return a
        child = a
    return None


CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic"})
COUNTER_WORDS = ("step", "iter", "batch_idx", "epoch")


def _first_iteration(test: ast.expr) -> bool:
    """``if step == 0:`` / ``if epoch == first_epoch and step == 0:`` (AnimateDiff's sanity
    dump of the first batch, held-out 43): a counter compared with 0, alone or in an ``and``,
    runs the block once, not every step."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_first_iteration(v) for v in test.values)
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
    ):
        return False
    sides = [test.left, test.comparators[0]]
    # Any fixed step, not only the first: ``if cfg.DEBUG and batch_idx == 1:`` (held-out 150's
    # deeptrane) prints one batch's value range once.
    fixed_step = any(
        isinstance(x, ast.Constant) and type(x.value) is int and x.value >= 0 for x in sides
    )
    counter = any(
        isinstance(x, ast.Name) and any(w in x.id.lower() for w in COUNTER_WORDS) for x in sides
    )
    return fixed_step and counter


def _last_iteration(test: ast.expr) -> bool:
    """``if i == len(loader) - 1:`` / ``if i + 1 == len(loader):`` (yolov5's end-of-epoch
    validation, held-out 38): the block runs on the last batch only, once per epoch."""
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
    ):
        return False
    sides = [test.left, test.comparators[0]]

    def is_len(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
        )

    def minus_one(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Sub)
            and is_len(node.left)
            and isinstance(node.right, ast.Constant)
            and node.right.value == 1
        )

    def plus_one(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add)
            and isinstance(node.right, ast.Constant)
            and node.right.value == 1
        )

    return any(minus_one(x) for x in sides) or (
        any(is_len(x) for x in sides) and any(plus_one(x) for x in sides)
    )


def _reads_clock(model: ScriptModel, test: ast.expr) -> bool:
    """``if now - last_log > 60:`` (a clock read in the test, or a name bound to one): the
    block runs every so many seconds, not every step."""
    for n in ast.walk(test):
        if isinstance(n, ast.Call) and model.call_name(n) in CLOCKS:
            return True
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            values = model.assigned_from(n.id)
            if values and all(
                any(isinstance(m, ast.Call) and model.call_name(m) in CLOCKS for m in ast.walk(v))
                for v in values
            ):
                return True
    return False


def _has_modulo(model: ScriptModel, test: ast.expr) -> bool:
    for n in ast.walk(test):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod):
            return True
        if isinstance(n, ast.Call) and _modulo_helper(model, n):
            return True
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            values = model.assigned_from(n.id)
            if values and all(
                any(isinstance(m, ast.BinOp) and isinstance(m.op, ast.Mod) for m in ast.walk(v))
                for v in values
            ):
                return True
    return False


def _modulo_helper(model: ScriptModel, call: ast.Call) -> bool:
    """``divisible_by(self.step, every)`` with ``def divisible_by(numer, denom): return
    (numer % denom) == 0`` in this script (lucidrains' trainers): a ``%`` test by another name."""
    if not isinstance(call.func, ast.Name):
        return False
    fn = model.functions.get(call.func.id)
    if fn is None:
        return False
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
    return bool(returns) and all(
        any(isinstance(m, ast.BinOp) and isinstance(m.op, ast.Mod) for m in ast.walk(r.value))
        for r in returns  # type: ignore[arg-type]
    )


def _periodic_parameter(
    model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef, block: ast.If
) -> ast.If | None:
    """``def update_weights(..., vis_result=False): ... if vis_result: <read>`` where every call
    of the step function passes a flag the caller sets every few steps (``if step_count %
    config.vis_interval == 0: vis_result = True else: vis_result = False``, EfficientZero,
    held-out 133; or ``log=step % 100 == 0``): the caller's periodic test (or ``block`` when the
    argument is the test itself), or None."""
    from ...semantic.rank_guards import call_sites  # noqa: PLC0415

    assert isinstance(block.test, ast.Name)
    name = block.test.id
    positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if name not in positional and name not in [a.arg for a in fn.args.kwonlyargs]:
        return None
    if any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(fn)
    ):
        return None  # rebound in the function: no longer the caller's flag
    calls = call_sites(model, fn)
    if not calls:
        return None
    found: ast.If | None = None
    for call in calls:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return None
        argument = next((k.value for k in call.keywords if k.arg == name), None)
        if argument is None and name in positional:
            index = positional.index(name)
            if isinstance(call.func, ast.Attribute) and positional[:1] == ["self"]:
                index -= 1
            argument = call.args[index] if 0 <= index < len(call.args) else None
        if argument is None:
            return None  # the default decides: not the caller's periodic flag
        if _has_modulo(model, argument):
            found = found or block
            continue
        test = _set_under_modulo(model, call, argument)
        if test is None:
            return None
        found = found or test
    return found


def _set_under_modulo(model: ScriptModel, call: ast.Call, argument: ast.expr) -> ast.If | None:
    """The ``if step % every == 0:`` under which the caller's scope sets the flag ``argument``
    names True (every other binding of it there a constant false value), or None."""
    if not isinstance(argument, ast.Name):
        return None
    scope = model.enclosing_function(call) or model.tree
    test: ast.If | None = None
    bindings = 0
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Name) and node.id == argument.id):
            continue
        if not isinstance(node.ctx, ast.Store):
            continue
        statement = model.parent(node)
        if not (isinstance(statement, ast.Assign) and statement.targets == [node]):
            return None
        value = statement.value
        bindings += 1
        if not isinstance(value, ast.Constant):
            return None
        if not value.value:
            continue
        guard = model.parent(statement)
        if not (
            isinstance(guard, ast.If) and statement in guard.body and _has_modulo(model, guard.test)
        ):
            return None
        test = guard
    return test if bindings else None
