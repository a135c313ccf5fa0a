"""Calls of device helpers that live outside the file (``dist_util.dev()``,
``select_device(...)`` imported from the workspace): XLA101 cannot see what they pick."""

from __future__ import annotations

import ast

from .model import ScriptModel

LIBRARY_ROOTS = frozenset(
    {"torch", "torch_xla", "accelerate", "transformers", "lightning", "pytorch_lightning", "numpy"}
)


def out_of_file_helper(model: ScriptModel, call: ast.Call) -> str | None:
    """``dist_util.dev`` / ``select_device``: a function imported from the workspace (a
    relative import or a non-library module), not defined in this file. None otherwise."""
    func = call.func
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name) or root.id in model.functions:
        return None
    target = model.imports.get(root.id)
    if target is not None:
        return None if target.split(".")[0] in LIBRARY_ROOTS else model.segment(func)
    return model.segment(func) if root.id in _relatively_imported(model) else None


def _relatively_imported(model: ScriptModel) -> frozenset[str]:
    """Names bound by ``from .x import y`` anywhere in the file (once per parse: asked for
    every call, a scan of every import per call grew with the file times its imports)."""

    def compute() -> frozenset[str]:
        return frozenset(
            a.asname or a.name
            for imp in model.import_nodes
            if isinstance(imp, ast.ImportFrom) and imp.level > 0
            for a in imp.names
        )

    return model.memo(_relatively_imported, compute)
