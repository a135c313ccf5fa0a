"""The local names a statement reads, in order: the arguments XLA401's step closure must be
given (``xm.add_step_closure(fn, args=(loss, step))``). Builtins, imports, the module's own
definitions and globals are read when the closure runs and are not passed."""

from __future__ import annotations

import ast
import builtins

from ...semantic.model import ScriptModel
from ...semantic.tensors import scope_of
from .closure_reads import frame_names

BUILTIN_NAMES = frozenset(dir(builtins))


def _module_level_names(model: ScriptModel) -> frozenset[str]:
    return model.memo(_module_level_names, lambda: frozenset(_top_level_definitions(model)))


def _top_level_definitions(model: ScriptModel) -> set[str]:
    out = set()
    for stmt in model.tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(stmt.name)
    return out


def _bound_in(model: ScriptModel, root: ast.AST) -> set[str]:
    out = set()
    for n in model.walk(root):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


def _frame_locals(model: ScriptModel, scope: ast.AST) -> frozenset[str]:
    """Names stored, deleted or taken as a parameter anywhere in ``scope`` (what
    ``_bound_in`` gives for it; one pass per frame, however many reports it has)."""
    return frame_names(model, scope).anywhere if scope is not model.tree else frozenset()


def free_names(model: ScriptModel, stmt: ast.stmt) -> list[str]:
    """Local names ``stmt`` reads, in order of first appearance (the closure's arguments)."""
    # Asked twice per finding (the review check and the fix's text): worked out once.
    return list(model.memo((free_names, stmt), lambda: tuple(_free_names(model, stmt))))


def _free_names(model: ScriptModel, stmt: ast.stmt) -> list[str]:
    scope = scope_of(model, stmt)
    local = _frame_locals(model, scope)
    bound_here = _bound_in(model, stmt)
    module_level = _module_level_names(model)
    imports = model.imports
    # Globals are read when the closure runs; only the frame's own names need binding now.
    # (Asked per name, not by copying every assignment of the script for each statement.)
    globals_skipped = model.assignments if scope is not model.tree else {}

    def skipped(name: str) -> bool:
        return (
            name in bound_here
            or name in module_level
            or name in imports
            or (name in globals_skipped and name not in local)
        )

    names: list[str] = []
    loads = sorted(
        (n for n in model.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for n in loads:
        if skipped(n.id) or n.id in names or (n.id in BUILTIN_NAMES and n.id not in local):
            continue
        names.append(n.id)
    return names
