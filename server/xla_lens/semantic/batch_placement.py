"""Batch elements a training loop leaves on the CPU: ``for image, gt, boxes in loader:`` that
moves ``image`` and ``gt`` with ``.to(device)`` and reads ``boxes.cpu().numpy()`` (held-out
42, MedSAM). The script places its batch element by element, so an element it never moves is
a CPU tensor, and reading it syncs nothing on XLA either.

Only for a plain torch DataLoader in a script that is not distributed: XLA106 wraps the loader
of a distributed loop in ``pl.MpDeviceLoader``, which moves every element of the batch.
"""

from __future__ import annotations

import ast

from .assigned_values import target_names
from .loaders import Source, classify, iterated_loader
from .model import ScriptModel, method_name, receiver

PLACING = frozenset({"to", "cuda"})


def _binding_loop(model: ScriptModel, name: ast.Name) -> ast.For | None:
    for a in model.ancestors(name):
        if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return None
        if isinstance(a, ast.For) and name.id in target_names(a.target):
            return a
    return None


def _stores(node: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store | ast.Del)
        for n in ast.walk(node)
    )


def stays_on_cpu(model: ScriptModel, name: ast.Name) -> bool:
    """``name`` is an element of the batch of the loop around it, which iterates a plain
    DataLoader, never rebinds ``name`` and moves another element of the batch to a device."""
    if model.is_distributed:
        return False
    loop = _binding_loop(model, name)
    if loop is None or any(_stores(s, name.id) for s in loop.body):
        return False
    if classify(model, iterated_loader(model, loop)) is not Source.PLAIN:
        return False
    others = set(target_names(loop.target)) - {name.id}
    return any(
        isinstance(n, ast.Call)
        and method_name(n) in PLACING
        and isinstance(recv := receiver(n), ast.Name)
        and recv.id in others
        for s in loop.body
        for n in ast.walk(s)
    )


__all__ = ["stays_on_cpu"]
