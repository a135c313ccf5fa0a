"""Library names a script gets through ``from <workspace module> import *`` (held-out 29:
pytorch-deeplab-xception's train.py imports nothing from torch itself; ``from modeling.deeplab
import *`` hands it ``torch``, ``nn`` and ``F``, so ``torch.nn.DataParallel`` and
``torch.cuda.is_available()`` resolved to nothing and every torch rule went quiet there).

What a star import binds from a module of the workspace: its top-level ``import x`` /
``import x.y as z`` / ``from lib import name`` bindings of library modules (not names it
defines, which the workspace readers resolve on their own), except names starting with an
underscore, and only those in ``__all__`` when the module sets one. The module is read from
disk (bounded, never imported or run), through ``workspace_calls.parsed_module``'s cache;
chained star imports are followed two deep. A script's own imports win.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .workspace import module_file
from .workspace_calls import ParsedModule, _is_library, parsed_module

MAX_DEPTH = 2


def star_import_names(path: str, import_nodes: list[ast.Import | ast.ImportFrom]) -> dict[str, str]:
    """local name -> qualified name, for the library names the script's star imports of
    workspace modules bind (empty for an unsaved buffer or a script without any)."""
    stars = [
        n
        for n in import_nodes
        if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
    ]
    if not stars or not path or path.startswith("<"):
        return {}
    out: dict[str, str] = {}
    for node in stars:
        if _is_library(node.module or "", node.level):
            continue
        target = module_file(path, node.module or "", node.level)
        if target is not None:
            _collect(target, out, MAX_DEPTH)
    return out


def _collect(target: Path, out: dict[str, str], depth: int) -> None:
    module = parsed_module(target)
    if module is None:
        return
    allowed = _all_names(module)
    for local, name in module.imports.items():
        if _exported(local, allowed) and _library(module, name, 0):
            out.setdefault(local, name)
    for local, (source, level, original) in module.reexports.items():
        if _exported(local, allowed) and level == 0 and _library(module, source, level):
            out.setdefault(local, f"{source}.{original}")
    if depth > 1:
        for source, level in module.star_imports:
            if not _is_library(source, level):
                inner = module_file(str(module.path), source, level)
                if inner is not None and inner != target:
                    _collect(inner, out, depth - 1)


def _library(module: ParsedModule, name: str, level: int) -> bool:
    """Not a module of the workspace (its names the workspace readers resolve themselves)."""
    return _is_library(name, level) or module_file(str(module.path), name, level) is None


def _exported(name: str, allowed: set[str] | None) -> bool:
    return not name.startswith("_") and (allowed is None or name in allowed)


def _all_names(module: ParsedModule) -> set[str] | None:
    for stmt in module.tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets)
            and isinstance(stmt.value, ast.List | ast.Tuple)
        ):
            return {e.value for e in stmt.value.elts if isinstance(e, ast.Constant)}
    return None
