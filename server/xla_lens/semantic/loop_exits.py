"""Whether an iteration leaves its loop once a call in it ran: ``while chunk_size != 0: try:
return learn(...) except RuntimeError: chunk_size //= 2`` (an out-of-memory retry,
tabular-dl-revisiting-models, held-out 107) runs ``learn`` once per call of its function; it
goes round again only when that failed. Such a loop repeats nothing the call did."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .node_helpers import LOOP_TYPES

if TYPE_CHECKING:
    from .model import ScriptModel


def leaves_after(model: ScriptModel, loop: ast.AST, call: ast.Call) -> bool:
    """Once ``call`` ran, the iteration always leaves ``loop``: a ``return``, or a ``break``
    of that loop, at or after the statement that holds it in some block around it (the
    ``else`` of a ``try`` runs after its body). A loop between the call and ``loop``: no."""
    stmt: ast.AST | None = model.enclosing_statement(call)
    while stmt is not None and stmt is not loop:
        parent = model.parent(stmt)
        if parent is None:
            return False
        for later in _after(parent, stmt):
            if isinstance(later, ast.Return | ast.Break):
                return True
        if parent is not loop and isinstance(parent, LOOP_TYPES):
            return False
        stmt = parent
    return False


def _after(parent: ast.AST, stmt: ast.AST) -> list[ast.stmt]:
    """The statements of ``parent`` that run once ``stmt`` did, on the normal path."""
    blocks: list[list[ast.stmt]] = []
    if isinstance(parent, ast.Try | ast.TryStar):
        if any(s is stmt for s in parent.body):
            return _from(parent.body, stmt) + parent.orelse + parent.finalbody
        blocks = [parent.orelse, parent.finalbody]
    elif isinstance(parent, ast.If):
        blocks = [parent.body, parent.orelse]
    elif isinstance(parent, (*LOOP_TYPES, ast.With, ast.AsyncWith)):
        blocks = [parent.body]
    for block in blocks:
        if any(s is stmt for s in block):
            return _from(block, stmt)
    return []


def _from(block: list[ast.stmt], stmt: ast.AST) -> list[ast.stmt]:
    at = next(i for i, s in enumerate(block) if s is stmt)
    return block[at:]


__all__ = ["leaves_after"]
