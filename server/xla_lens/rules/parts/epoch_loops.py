"""Nodes of the epoch loop around a training loop, outside the step loop itself (XLA112,
held-out 8 Y4: yunjey's language model builds its initial LSTM states with
``torch.zeros(...).to(device)`` once per epoch, then steps over the chunks).

They run once per epoch: cheap next to a step's, but GUIDE H's "create on the device" holds
there too. Only a ``for`` / ``while`` in the same function as the training loop counts, and
its own nodes only (the training loop's, and nested functions', are left out).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel
from ...semantic.node_helpers import SCOPE_TYPES

LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _epoch_loop(model: ScriptModel, loop: ast.AST) -> ast.AST | None:
    for a in model.ancestors(loop):
        if isinstance(a, SCOPE_TYPES):
            return None
        if isinstance(a, LOOPS):
            return a
    return None


def epoch_loop_nodes(model: ScriptModel) -> Iterator[ast.AST]:
    """Nodes run once per pass of an epoch loop (not per step), each once."""
    inner: set[int] = set()
    outers: dict[int, ast.AST] = {}
    for loop in model.training_loops:
        inner.update(id(n) for n in ast.walk(loop.node))
        outer = _epoch_loop(model, loop.node)
        if outer is not None:
            outers.setdefault(id(outer), outer)
    seen: set[int] = set()
    for outer in outers.values():
        body = [*outer.body]  # type: ignore[attr-defined]
        for stmt in body:
            if id(stmt) in inner:
                continue
            for n in [stmt, *model.walk_scope(stmt)]:
                if id(n) not in inner and id(n) not in seen:
                    seen.add(id(n))
                    yield n
