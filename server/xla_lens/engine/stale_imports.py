"""CUDA AMP imports the fixes left unused go too (held-outs 149 and 150:
``from torch.cuda.amp import autocast, GradScaler`` stayed behind after XLA102 rewrote every
``autocast()`` into ``torch.autocast("xla", ...)``).

A name is removed from its import only when the code before the fixes read it and the code
after reads it nowhere (no load of the name in any scope): the fixes converted its last use,
so nothing can reach the binding any more. An import the script never used is not touched
(that is the author's, not a conversion's leftover), nor one inside a ``try`` (an
``except ImportError`` fallback binds the name too), nor one sharing its line with another
statement. Importing ``torch.cuda.amp`` does nothing else once ``torch`` is imported, so the
removal keeps the program's meaning. (``rules/parts/unused_amp_imports.py`` reports such an
import between rounds in a script that imports torch_xla; this pass removes it in the same
edit that converts its last use, wherever the import sits and whatever else the file imports.)
"""

from __future__ import annotations

import ast
from collections import Counter

from ..rules.base import EditOp, RemoveStatement, ReplaceStatement
from ..semantic.model import ScriptModel

AMP_MODULE = "torch.cuda.amp"


def stale_import_ops(before: str, after: str) -> list[EditOp]:
    """Edits of ``after`` (``before`` with fixes applied) removing the CUDA AMP import names
    the fixes left unused; none when there are none."""
    if "torch.cuda" not in after or before == after:
        return []
    try:
        old_tree, new_tree = ast.parse(before), ast.parse(after)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    imports = [n for n in ast.walk(new_tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    bound = {imp: _amp_bindings(imp) for imp in imports}
    if not any(bound.values()):
        return []
    old_loads, new_loads = _loads(old_tree), _loads(new_tree)
    model = ScriptModel(after, new_tree, "<fixed>")
    ops: list[EditOp] = []
    for imp, bindings in bound.items():
        stale = [a for a, local in bindings if old_loads[local] and not new_loads[local]]
        if not stale or _guarded(model, imp) or not _alone_on_its_lines(model, imp):
            continue
        kept = [a for a in imp.names if a not in stale]
        if not kept:
            ops.append(RemoveStatement(model.span(imp)))
        else:
            ops.append(ReplaceStatement(model.span(imp), _rebuilt(imp, kept)))
    return ops


def _amp_bindings(imp: ast.Import | ast.ImportFrom) -> list[tuple[ast.alias, str]]:
    """(alias, local name) of each name ``imp`` binds to CUDA's AMP module or to a name in it."""
    if isinstance(imp, ast.Import):
        return [(a, a.asname) for a in imp.names if a.name == AMP_MODULE and a.asname]
    if imp.level != 0:
        return []
    if imp.module == AMP_MODULE:
        return [(a, a.asname or a.name) for a in imp.names if a.name != "*"]
    if imp.module == "torch.cuda":
        return [(a, a.asname or a.name) for a in imp.names if a.name == "amp"]
    return []


def _loads(tree: ast.AST) -> Counter[str]:
    return Counter(
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)
    )


def _guarded(model: ScriptModel, imp: ast.AST) -> bool:
    return any(isinstance(a, ast.Try | ast.TryStar) for a in model.ancestors(imp))


def _alone_on_its_lines(model: ScriptModel, imp: ast.stmt) -> bool:
    """The statement's lines hold nothing else (``import x; from torch.cuda.amp import ...``
    is left alone)."""
    parent = model.parent(imp)
    for field in ("body", "orelse", "finalbody", "handlers"):
        for sibling in getattr(parent, field, None) or ():
            if sibling is imp or not isinstance(sibling, ast.stmt):
                continue
            end = sibling.end_lineno or sibling.lineno
            if sibling.lineno <= (imp.end_lineno or imp.lineno) and end >= imp.lineno:
                return False
    return True


def _rebuilt(imp: ast.Import | ast.ImportFrom, kept: list[ast.alias]) -> str:
    names = ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in kept)
    if isinstance(imp, ast.Import):
        return f"import {names}"
    return f"from {imp.module} import {names}"
