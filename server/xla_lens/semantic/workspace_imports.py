"""Which workspace modules an import runs, found on disk (never imported or run).

``from op import conv2d_gradfix`` runs ``op/__init__.py``, which runs ``op/fused_act.py`` and
``op/upfirdn2d.py``: the modules a module imports at its top level (also inside a top-level
``try``/``if``), followed ``MAX_DEPTH`` imports deep within the project. Library and standard
library modules end a branch.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from .workspace import module_file
from .workspace_calls import _is_library, parsed_module

MAX_DEPTH = 3
MAX_MODULES = 40


def import_targets(importer: Path, node: ast.Import | ast.ImportFrom) -> list[Path]:
    """The workspace files the import statement ``node`` of ``importer`` runs first: the
    module itself, and for ``from pkg import mod`` the submodule ``mod``."""
    out: list[Path] = []

    def add(module: str, level: int) -> None:
        if level == 0 and (not module or _is_library(module, 0)):
            return
        path = module_file(str(importer), module, level)
        if path is not None and path != importer and path not in out:
            out.append(path)

    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            for i in range(1, len(parts) + 1):  # ``import a.b`` runs a, then a.b
                add(".".join(parts[:i]), 0)
    else:
        source = node.module or ""
        add(source, node.level)
        for alias in node.names:
            if alias.name != "*":
                add(f"{source}.{alias.name}" if source else alias.name, node.level)
    return out


def top_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported: not those inside functions or classes."""
    stack: list[ast.stmt] = list(reversed(tree.body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            yield stmt
        elif isinstance(stmt, ast.If | ast.Try | ast.With | ast.TryStar):
            for field in ("body", "orelse", "finalbody"):
                stack.extend(reversed(getattr(stmt, field, [])))
            for handler in getattr(stmt, "handlers", []):
                stack.extend(reversed(handler.body))


def modules_run_by(importer: Path, node: ast.Import | ast.ImportFrom) -> list[Path]:
    """Every workspace module importing ``node`` runs, breadth first (the nearest first)."""
    seen: list[Path] = []
    frontier = import_targets(importer, node)
    for _ in range(MAX_DEPTH):
        following: list[Path] = []
        for path in frontier:
            if path in seen or len(seen) >= MAX_MODULES:
                continue
            seen.append(path)
            parsed = parsed_module(path)
            if parsed is None:
                continue
            for inner in top_level_imports(parsed.tree):
                following += [p for p in import_targets(path, inner) if p not in seen]
        frontier = following
    return seen
