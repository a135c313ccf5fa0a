"""The module-level assignments a function reads as globals.

``utils.py``: ``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`` at
the top, then ``def encode(...): return text.to(device)``. The function's body names no CUDA
device, yet it places on whatever the module chose at import; what a call of it runs
includes that assignment (deep-text-recognition-benchmark's utils.py and test.py, held-out
40). Pure syntax over one module's tree: top-level ``name = ...`` statements only (a value
bound inside an ``if`` at module level is not followed).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable


def module_assignments(tree: ast.Module) -> dict[str, list[ast.stmt]]:
    """Each name a top-level ``=`` (or annotated ``=``) of the module binds, with its statements."""
    found: dict[str, list[ast.stmt]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets = [t for t in stmt.targets if isinstance(t, ast.Name)]
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets = [stmt.target] if isinstance(stmt.target, ast.Name) else []
        else:
            continue
        for t in targets:
            found.setdefault(t.id, []).append(stmt)  # type: ignore[union-attr]
    return found


def global_reads(tree: ast.Module, regions: Iterable[ast.AST]) -> list[tuple[int, int]]:
    """Line ranges (1-based, inclusive) of the top-level assignments whose names one of
    ``regions`` (functions of the module) reads without binding them itself."""
    assigned = module_assignments(tree)
    if not assigned:
        return []
    out: dict[tuple[int, int], None] = {}
    for region in regions:
        stored: set[str] = set()
        declared: set[str] = set()
        loads: list[str] = []
        for n in ast.walk(region):
            if isinstance(n, ast.Name):
                if isinstance(n.ctx, ast.Load):
                    loads.append(n.id)
                else:
                    stored.add(n.id)
            elif isinstance(n, ast.arg):
                stored.add(n.arg)
            elif isinstance(n, ast.Global):
                declared.update(n.names)
        local = stored - declared
        for name in dict.fromkeys(loads):
            if name in local or name not in assigned:
                continue
            for stmt in assigned[name]:
                out[(stmt.lineno, stmt.end_lineno or stmt.lineno)] = None
    return list(out)
