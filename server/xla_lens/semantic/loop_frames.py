"""Which frame runs a node, and what the training loops of a frame run and bind.

A name's value belongs to the frame (function, lambda, class or module) that binds it, so
``TensorNames`` judges names per frame; a training loop's body runs in its own frame and in
the step functions it calls; the target of a ``for`` training loop holds the batch. Shared
by ``tensors.py`` and the rules that read tensors in loops (XLA112, XLA401, XLA402, XLA404).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .assigned_values import target_names
from .model import SCOPE_TYPES, ScriptModel, TrainingLoop

RANGE_FUNCTIONS = frozenset({"range", "xrange", "trange"})
COUNTERS = frozenset({"itertools.count", "tqdm.trange", "tqdm.auto.trange"})


def scope_of(model: ScriptModel, node: ast.AST) -> ast.AST:
    """The function, lambda or class whose frame runs ``node`` (the module at top level)."""
    # Asked for every node of every training loop by several rules: once per node.
    cache: dict[ast.AST, ast.AST] = model.memo(scope_of, dict)
    found = cache.get(node)
    if found is None:
        found = cache[node] = _scope_of(model, node)
    return found


def for_loops_by_scope(model: ScriptModel) -> dict[ast.AST, list[ast.For | ast.AsyncFor]]:
    """The ``for`` training loops of each frame: every scope asks for its own, and a big
    script has as many scopes as loops."""

    def index() -> dict[ast.AST, list[ast.For | ast.AsyncFor]]:
        out: dict[ast.AST, list[ast.For | ast.AsyncFor]] = {}
        for loop in model.training_loops:
            if isinstance(loop.node, ast.For | ast.AsyncFor):
                out.setdefault(scope_of(model, loop.node), []).append(loop.node)
        return out

    return model.memo(for_loops_by_scope, index)


def _scope_of(model: ScriptModel, node: ast.AST) -> ast.AST:
    for a in model.ancestors(node):
        if isinstance(a, SCOPE_TYPES):
            return a
    return model.tree


def loop_nodes(model: ScriptModel) -> Iterator[tuple[TrainingLoop, ast.AST]]:
    """Nodes a training loop runs every iteration, in its own frame or a step function's.

    Nested functions and lambdas written inside the loop are left out: they run whenever
    they are called (a step closure, a ``sort`` key), not necessarily in this step.
    """
    return iter(model.memo(loop_nodes, lambda: list(_loop_nodes(model))))


def _loop_nodes(model: ScriptModel) -> Iterator[tuple[TrainingLoop, ast.AST]]:
    for loop, node in model.nodes_in_training_loops():
        scope = scope_of(model, node)
        if scope is scope_of(model, loop.node) or scope in loop.step_functions:
            yield loop, node


def _is_counter(model: ScriptModel, call: ast.Call) -> bool:
    if model.call_name(call) in COUNTERS:
        return True
    return isinstance(call.func, ast.Name) and call.func.id in RANGE_FUNCTIONS


def counts(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> bool:
    """``for step in range(n)`` (``tqdm(range(n))``, ``itertools.count()``): a plain-name
    target that takes Python ints."""
    return (
        isinstance(loop.target, ast.Name)
        and isinstance(loop.iter, ast.Call)
        and _is_counter(model, loop.iter)
        and not loop.iter.keywords
    )


def batch_names(model: ScriptModel, loop: ast.For | ast.AsyncFor) -> list[str]:
    """Names the loop binds to data from a loader (not ``enumerate``'s index, not ``range``)."""
    it, target = loop.iter, loop.target
    if isinstance(it, ast.List | ast.Tuple | ast.Constant):
        return []
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "zip"
        and not it.keywords
        and isinstance(target, ast.Tuple | ast.List)
        and len(target.elts) == len(it.args)
        and not any(isinstance(a, ast.Starred) for a in it.args)
    ):
        # ``for i, batch in zip(tqdm(range(n)), cycle(loader))`` (onsets-and-frames, held-out
        # 127): ``i`` is the counter's, ``batch`` the loader's.
        return [
            n
            for arg, t in zip(it.args, target.elts, strict=True)
            if not _counts(model, arg)
            for n in target_names(t)
        ]
    if _counts(model, it):
        return []  # ``tqdm(range(n))``, ``itertools.count()``, ``steps = range(n)``: counters
    values = model.assigned_from(it.id) if isinstance(it, ast.Name) else [it]
    if values and all(plain_numbers(v) for v in values):
        return []  # ``warm = sorted({0, 1} | {...})``: Python numbers, no data
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "enumerate"
        and isinstance(target, ast.Tuple)
        and target.elts
    ):
        return [n for t in target.elts[1:] for n in target_names(t)]
    return target_names(target)


def _counts(model: ScriptModel, it: ast.AST) -> bool:
    """``it`` yields step counters, not data: ``tqdm(range(n))``, ``itertools.count()``, or a
    name bound to one (``steps = range(n)``, maybe ``tqdm(steps)``)."""
    if any(isinstance(n, ast.Call) and _is_counter(model, n) for n in model.walk(it)):
        return True
    # Imported here: counter_iterables needs reaching, which imports this module's users.
    from .counter_iterables import counts_through_name  # noqa: PLC0415

    return counts_through_name(model, it, lambda call: _is_counter(model, call))


NUMBER_BUILTINS = frozenset(
    {"sorted", "list", "set", "tuple", "range", "reversed", "min", "max", "int", "abs"}
)


def plain_numbers(node: ast.AST) -> bool:
    """Whether ``node`` builds Python numbers (or collections of them) from literals alone:
    literals, collections, comprehensions over them, arithmetic and the builtins that sort,
    collect or count. A name counts only as a comprehension's own variable."""
    bound = {
        n.id
        for g in ast.walk(node)
        if isinstance(g, ast.comprehension)
        for n in ast.walk(g.target)
        if isinstance(n, ast.Name)
    }
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            if n.id not in bound and n.id not in NUMBER_BUILTINS:
                return False
        elif isinstance(n, ast.Call):
            if not (isinstance(n.func, ast.Name) and n.func.id in NUMBER_BUILTINS) or n.keywords:
                return False
        elif isinstance(n, ast.Constant):
            if not isinstance(n.value, int | float) or isinstance(n.value, bool):
                return False
        elif not isinstance(
            n,
            ast.List
            | ast.Tuple
            | ast.Set
            | ast.ListComp
            | ast.SetComp
            | ast.GeneratorExp
            | ast.comprehension
            | ast.BinOp
            | ast.UnaryOp
            | ast.operator
            | ast.unaryop
            | ast.expr_context,
        ):
            return False
    return True
