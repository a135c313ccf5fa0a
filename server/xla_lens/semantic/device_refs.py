"""Which name a fix may use for the script's device at a site: the device variable, only where
it is bound on every path to the site (held-out 43, HRNet: ``device`` bound under ``if
distributed:``; the ``else:`` of a later test made ``.to(device)`` an UnboundLocalError).
Elsewhere the fixes name the XLA device itself."""

from __future__ import annotations

import ast

from .model import ScriptModel


def device_ref_at(model: ScriptModel, node: ast.AST) -> str | None:
    """The device variable if it is bound on every path to where ``node`` runs, else None
    (``device`` bound under ``if distributed:`` is unbound in the ``else:`` of a later test;
    held-out 43, HRNet, whose ``.cuda()`` there became ``.to(device)``: UnboundLocalError)."""
    var = model.device_variable
    if var is None:
        return None
    by_function = _bindings_by_function(model, var)
    fn = model.enclosing_function(node)
    if fn is not None and None in by_function:
        return var  # bound at module level: visible in every function
    if fn not in by_function:
        return None
    child: ast.AST = node
    for block in model.ancestors(node):
        for name in _BRANCH_FIELDS:
            stmts = getattr(block, name, None)
            if not isinstance(stmts, list):
                continue
            at = next((i for i, s in enumerate(stmts) if s is child), None)
            if at is not None and any(_binds_on_every_path(s, var) for s in stmts[:at]):
                return var
        if block is fn or isinstance(block, ast.Module):
            return None
        child = block
    return None


def _bindings_by_function(model: ScriptModel, var: str) -> dict[ast.AST | None, int]:
    """How many assignments of ``var`` each function has (None: the module), once per parse:
    ``device_ref_at`` is asked per site, a scan of every binding per site was quadratic on
    big files."""

    def compute() -> dict[ast.AST | None, int]:
        out: dict[ast.AST | None, int] = {}
        for a in model.assignments.get(var, []):
            fn = model.enclosing_function(a)
            out[fn] = out.get(fn, 0) + 1
        return out

    return model.memo((_bindings_by_function, var), compute)


_BRANCH_FIELDS = ("body", "orelse", "finalbody", "handlers")


def _binds_on_every_path(stmt: ast.stmt, var: str) -> bool:
    """``stmt`` binds ``var`` whichever way it runs (not: a loop that may not run, an ``if``
    without an ``else`` that binds it too)."""
    if isinstance(stmt, ast.Assign):
        return any(_names(t, var) for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return stmt.value is not None and _names(stmt.target, var)
    if isinstance(stmt, ast.If):
        return _block_binds(stmt.body, var) and _block_binds(stmt.orelse, var)
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return _block_binds(stmt.body, var)
    if isinstance(stmt, ast.Try):
        if _block_binds(stmt.finalbody, var):
            return True
        return _block_binds(stmt.body, var) and all(
            _block_binds(h.body, var) for h in stmt.handlers
        )
    return False


def _block_binds(stmts: list[ast.stmt], var: str) -> bool:
    return any(_binds_on_every_path(s, var) for s in stmts)


def _names(target: ast.AST, var: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == var
    if isinstance(target, ast.Tuple | ast.List):
        return any(_names(e, var) for e in target.elts)
    return False


__all__ = ["device_ref_at"]
