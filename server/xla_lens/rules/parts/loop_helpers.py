"""XLA402: the script's functions a training loop runs, so a data-dependent op written in a
helper is found where it runs (held-out 8, hlb-CIFAR10: ``masked_select`` in ``batch_crop``,
called by the generator ``get_batches`` that the loop iterates).

Two ways in: a call in the loop's body or step functions (runs every step; calling a module
of this script, ``net(x)``, runs its ``forward``), and a call in a
``for`` loop's iterable (``for x, y in get_batches(...)``): the generator's code runs as the
loop draws batches, its set-up once per epoch. Callees of callees are followed
``HELPER_DEPTH`` deep. Only functions of this script (``model.steps.callee``) are followed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ...semantic.calls import class_methods, classes, module_forward
from ...semantic.loop_frames import loop_nodes
from ...semantic.model import ScriptModel

# helper -> helper's helper -> one more: deep enough for batch preparation pipelines.
HELPER_DEPTH = 3


@dataclass(frozen=True)
class Helper:
    fn: ast.AST
    # The call in the loop (body or iterable) through which it runs.
    entry: ast.Call
    # True: reached through the loop's iterable (a batch generator), not the step body.
    feeds_loop: bool


def _calls(model: ScriptModel, nodes: Iterator[ast.AST]) -> Iterator[tuple[ast.Call, ast.AST]]:
    for n in nodes:
        if isinstance(n, ast.Call):
            fn = model.steps.callee(n) or module_forward(model, n)
            if fn is not None:
                yield n, fn


def loop_helpers(model: ScriptModel) -> list[Helper]:
    """Functions of this script a training loop runs, each once, step callers first."""
    out: dict[int, Helper] = {}
    step_nodes = [node for _loop, node in loop_nodes(model)]
    iter_nodes: list[ast.AST] = []
    for loop in model.training_loops:
        if isinstance(loop.node, ast.For | ast.AsyncFor):
            iter_nodes.extend(ast.walk(loop.node.iter))
    frontier: list[Helper] = []
    for nodes, feeds in ((step_nodes, False), (iter_nodes, True)):
        for call, fn in _calls(model, iter(nodes)):
            if id(fn) not in out and fn not in loop_step_functions(model):
                out[id(fn)] = h = Helper(fn, call, feeds)
                frontier.append(h)
    for loop in model.training_loops:
        if isinstance(loop.node, ast.For | ast.AsyncFor):
            for call, fn in _iterated_classes(model, loop.node.iter):
                if id(fn) not in out:
                    out[id(fn)] = h = Helper(fn, call, True)
                    frontier.append(h)
    for _ in range(HELPER_DEPTH - 1):
        found: list[Helper] = []
        for h in frontier:
            for _call, fn in _calls(model, iter(model.walk_scope(h.fn))):
                if id(fn) not in out:
                    out[id(fn)] = nh = Helper(fn, h.entry, h.feeds_loop)
                    found.append(nh)
        frontier = found
    return list(out.values())


def loop_step_functions(model: ScriptModel) -> list[ast.AST]:
    """Step functions whose nodes ``loop_nodes`` already yields."""
    return [fn for loop in model.training_loops for fn in loop.step_functions]


def _iterated_classes(model: ScriptModel, it: ast.expr) -> list[tuple[ast.Call, ast.AST]]:
    """``for x, y in loader:`` over an instance of a class of this script (``loader =
    DeviceLoader(...)``): its ``__iter__`` runs as the loop draws batches (held-out 14,
    airbench's loader that crops each epoch's data on the device)."""
    values = model.assigned_from(it.id) if isinstance(it, ast.Name) else [it]
    out = []
    for value in values:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            cls = classes(model).get(value.func.id)
            method = class_methods(cls).get("__iter__") if cls is not None else None
            if method is not None:
                out.append((value, method))
    return out
