"""The batch a loop binds: its target past ``enumerate``'s index, whether the body rebinds a
name, and loops whose loader batch never reaches the step (XLA402: its shape does not matter,
so its loader needs no ``drop_last``)."""

from __future__ import annotations

import ast


def batch_target(loop: ast.For | ast.AsyncFor) -> ast.expr:
    """``for x, y in loader`` / ``for i, (x, y) in enumerate(loader)``: ``x, y``."""
    target = loop.target
    it = loop.iter
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "enumerate"
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
    ):
        target = target.elts[1]  # the index is not the batch
    return target


def rebound_in_body(loop: ast.For | ast.AsyncFor, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for stmt in loop.body
        for n in ast.walk(stmt)
    )


def _batch_names(loop: ast.For | ast.AsyncFor) -> set[str]:
    return {n.id for n in ast.walk(batch_target(loop)) if isinstance(n, ast.Name)}


def batch_discarded(loop: ast.For | ast.AsyncFor) -> bool:
    """Every name the loader's batch is bound to is rebound before any read (lit-llama's
    ``for i, (x, y) in enumerate(loader): ... x, y = get_batch(...)``): that loader's batch
    never reaches the step, so its shape does not matter."""
    names = _batch_names(loop)
    if not names:
        return False
    left = set(names)
    for stmt in loop.body:
        mentioned = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)} & left
        if not mentioned:
            continue
        if not isinstance(stmt, ast.Assign):
            return False
        read = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
        stored = {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if mentioned & read or not mentioned <= stored:
            return False
        left -= mentioned
        if not left:
            return True
    return False


__all__ = ["batch_discarded", "batch_target", "rebound_in_body"]
