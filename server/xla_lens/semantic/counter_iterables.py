"""Whether a loop iterates step counters through a name: ``steps = range(n)`` (maybe
``steps = tqdm(steps, ...)`` on the main process, or ``iter(steps)``) then ``for i in steps:``.

An inline ``for i in range(n)`` / ``tqdm(range(n))`` is known to count (``loop_frames``); the
same counter bound to a name first must count too, or ``i`` and everything computed from it
(``if i % 100 == 0``) is taken for a batch tensor. Every whole binding of the name in its frame
must be such a counter: one other binding (a loader, a tensor, a ``for`` target, a parameter)
and the loop is judged as iterating data, as before.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .model import ScriptModel
from .node_helpers import dotted
from .reaching import UNKNOWN, whole_bindings
from .tensors import scope_of

# Names bound to a counter, followed this far (``a = range(n); b = iter(a); for i in b``).
MAX_DEPTH = 4


def counts_through_name(
    model: ScriptModel, it: ast.expr, is_counter: Callable[[ast.Call], bool]
) -> bool:
    """Whether ``it`` (a ``for`` loop's iterable) is a name whose every binding in its frame
    is a counter (``is_counter``) or a progress bar / ``iter`` wrapping one (or the name
    itself, as in ``pbar = tqdm(pbar)``)."""
    if not isinstance(it, ast.Name):
        return False
    return _counts(model, it.id, scope_of(model, it), is_counter, {it.id}, 0)


def _counts(
    model: ScriptModel,
    name: str,
    scope: ast.AST,
    is_counter: Callable[[ast.Call], bool],
    seen: set[str],
    depth: int,
) -> bool:
    values = whole_bindings(model, scope, name)
    # A parameter or a global has no binding here: what it holds is unknown.
    if not values or depth > MAX_DEPTH:
        return False
    return all(
        _is_counting_value(model, value, scope, is_counter, seen, depth)
        if isinstance(node, ast.Assign) and value is not UNKNOWN
        else _counting_bar(model, node, scope, is_counter, seen, depth)
        for node, value in values
    )


def _counting_bar(
    model: ScriptModel,
    node: ast.AST,
    scope: ast.AST,
    is_counter: Callable[[ast.Call], bool],
    seen: set[str],
    depth: int,
) -> bool:
    """``with trange(1, n + 1) as pbar:`` / ``with tqdm(range(n)) as pbar:``: a progress bar
    entered as a context is itself, and yields the counter it wraps (pytorch-gan-collections'
    ``for step in pbar``, held-out 46)."""
    if not (isinstance(node, ast.withitem) and isinstance(node.context_expr, ast.Call)):
        return False
    bar = node.context_expr
    callee = (model.call_name(bar) or dotted(bar.func) or "").split(".")[-1].lower()
    if not (callee.endswith("tqdm") or callee == "trange"):
        return False
    return _is_counting_value(model, bar, scope, is_counter, seen, depth)


def _is_counting_value(
    model: ScriptModel,
    value: ast.expr,
    scope: ast.AST,
    is_counter: Callable[[ast.Call], bool],
    seen: set[str],
    depth: int,
) -> bool:
    if isinstance(value, ast.Name):
        if value.id in seen:
            return True  # ``pbar = tqdm(pbar)``: the name's other bindings decide
        seen.add(value.id)
        return _counts(model, value.id, scope, is_counter, seen, depth + 1)
    if not isinstance(value, ast.Call):
        return False
    if is_counter(value):
        return True
    callee = (model.call_name(value) or dotted(value.func) or "").split(".")[-1]
    # A progress bar (``tqdm``, ``TQDM``) or ``iter`` yields what it wraps.
    wraps = callee == "iter" or callee.lower().endswith("tqdm")
    return (
        wraps
        and bool(value.args)
        and _is_counting_value(model, value.args[0], scope, is_counter, seen, depth)
    )
