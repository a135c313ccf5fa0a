"""XLA402: DataLoaders whose batches reach the training step through ``next()``, not a
``for`` loop (held-out 13, deep-text-recognition: per-source loaders in a helper class,
each drained with ``next(iterator)`` every step and the batches concatenated; none drops
its short last batch, so the step's shape changes whenever one source wraps around).

The ``next(x)`` calls are those the training loop runs each iteration (its body, step
functions and the script's helpers it calls, ``loop_helpers``). ``x`` is followed back to
the loaders it iterates: names and ``self.`` attributes to the values assigned to them,
``for`` targets to their iterable, subscripts to their container, comprehensions and
lists to their elements, and ``iter``/``enumerate``/``zip``/``itertools.cycle`` to their
arguments. Any other call ends the trail (what a function returns is out of sight).
"""

from __future__ import annotations

import ast

from ...semantic.loop_frames import loop_nodes
from ...semantic.model import ScriptModel
from ...semantic.rank_guards import attribute_values
from .loop_helpers import loop_helpers

DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
PASS_THROUGH = {"iter", "enumerate", "zip", "itertools.cycle", "reversed", "list"}
MAX_DEPTH = 10


def drained_loaders(model: ScriptModel) -> list[ast.Call]:
    """DataLoader calls whose iterators the training loop advances with ``next()``."""
    return model.memo(drained_loaders, lambda: _drained(model))


def _drained(model: ScriptModel) -> list[ast.Call]:
    if "next" in model.functions or "next" in model.imports:
        return []  # ``next`` is the script's own
    nodes = [node for _loop, node in loop_nodes(model)]
    for helper in loop_helpers(model):
        nodes.extend(model.walk_scope(helper.fn))
    found: dict[int, ast.Call] = {}
    for node in nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "next"
            and node.args
        ):
            for call in _loaders(model, node.args[0], 0, set()):
                if not _counted_sampler(call):
                    found.setdefault(id(call), call)
    return sorted(found.values(), key=lambda c: (c.lineno, c.col_offset))


def _counted_sampler(call: ast.Call) -> bool:
    """``sampler=RandomSampler(ds, replacement=True, num_samples=int(1e10))``: the script
    chose the epoch's length (minGPT: never-ending), so its end is no step's concern."""
    sampler = next((k.value for k in call.keywords if k.arg == "sampler"), None)
    return isinstance(sampler, ast.Call) and any(k.arg == "num_samples" for k in sampler.keywords)


def _loop_iterables(model: ScriptModel) -> dict[str, list[ast.expr]]:
    """Name -> the iterables of the ``for`` loops and comprehensions that bind it."""

    def build() -> dict[str, list[ast.expr]]:
        out: dict[str, list[ast.expr]] = {}
        for node in model.nodes_of(ast.For, ast.AsyncFor, ast.comprehension):
            target, iterable = node.target, node.iter  # type: ignore[attr-defined]
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    out.setdefault(name.id, []).append(iterable)
        return out

    return model.memo(_loop_iterables, build)


def _call_name(model: ScriptModel, call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name) and call.func.id in PASS_THROUGH - {"itertools.cycle"}:
        return call.func.id if call.func.id not in model.functions else None
    return model.call_name(call)


def _loaders(model: ScriptModel, expr: ast.AST, depth: int, seen: set[int]) -> list[ast.Call]:
    if depth > MAX_DEPTH or id(expr) in seen:
        return []
    seen.add(id(expr))
    values: list[ast.AST] = []
    if isinstance(expr, ast.Call):
        name = _call_name(model, expr)
        if name in DATALOADERS:
            return [expr]
        if name in PASS_THROUGH:
            values = list(expr.args)
    elif isinstance(expr, ast.Name):
        values = [*model.assigned_from(expr.id), *_loop_iterables(model).get(expr.id, [])]
    elif isinstance(expr, ast.Attribute):
        dotted_name = ast.unparse(expr)
        values = list(attribute_values(model).get(dotted_name, []))
    elif isinstance(expr, ast.Subscript):
        values = [expr.value]
    elif isinstance(expr, ast.List | ast.Tuple):
        values = list(expr.elts)
    elif isinstance(expr, ast.ListComp | ast.GeneratorExp):
        values = [expr.elt]
    out: list[ast.Call] = []
    for value in values:
        out.extend(_loaders(model, value, depth + 1, seen))
    return out
