"""No finding in code the script switched off itself (semantic/switched_off.py:
``args.distributed = False`` then ``if args.distributed: model = DDP(model)``), nor on an
optional import (``try: from apex.parallel import DDP except ImportError: ...``) whose every
use lies in such code: that code never runs, and the import failing on
an XLA host is what its ``except`` is for."""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel
from ...semantic.switched_off import switched_off, switched_off_at
from ..base import Finding

IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def leave_switched_off(model: ScriptModel, findings: list[Finding]) -> list[Finding]:
    if not switched_off(model):
        return findings
    return [
        f
        for f in findings
        if switched_off_at(model, f.span) is None and not _unused_optional_import(model, f)
    ]


def _unused_optional_import(model: ScriptModel, f: Finding) -> bool:
    for node in model.import_nodes:
        if model.span(node) != f.span or not _optional(model, node):
            continue
        names = [a.asname or a.name.split(".")[0] for a in node.names]
        uses = [u for n in names for u in model.name_nodes(n) if isinstance(u.ctx, ast.Load)]
        return bool(uses) and all(switched_off_at(model, model.span(u)) is not None for u in uses)
    return False


def _optional(model: ScriptModel, node: ast.stmt) -> bool:
    """The import is in a ``try`` whose handler catches its failure."""
    parent = model.parent(node)
    if not isinstance(parent, ast.Try) or node not in parent.body:
        return False
    for handler in parent.handlers:
        kinds = handler.type
        if kinds is None:
            return True
        elts = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
        if any(isinstance(e, ast.Name) and e.id in IMPORT_ERRORS for e in elts):
            return True
    return False


__all__ = ["leave_switched_off"]
