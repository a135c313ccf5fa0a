"""Whether a script makes ``print`` master-only itself: ``builtins.print = fn`` (or
``__builtin__.print = fn`` after ``import builtins as __builtin__``, or
``__builtins__.print = fn``), in the script or in a workspace helper it calls.

FAIR-style repositories call ``misc.init_distributed_mode(args)`` at the start of ``main``;
that helper calls ``setup_for_distributed(is_master)``, which swaps ``builtins.print`` for a
function printing on the master only (unless ``force=True``). Every ``print`` after it is
already rank-0 output. The helper's module is read from disk through
``workspace_calls`` (cached per file version), never imported or run; the module's own
functions it calls are followed ``MAX_DEPTH`` calls deep.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from .node_helpers import dotted
from .workspace_calls import ParsedModule, helper_target, parsed_module

if TYPE_CHECKING:
    from .model import ScriptModel

MAX_DEPTH = 3
BUILTIN_MODULES = frozenset({"builtins", "__builtin__", "__builtins__"})
PRINT_SLOTS = frozenset(f"{m}.print" for m in BUILTIN_MODULES)
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

# (path, function) -> (the module's tree it was computed on, the answer)
_cache: dict[tuple[str, str], tuple[ast.Module, bool]] = {}
_CACHE_LIMIT = 128


def clear_cache() -> None:
    _cache.clear()


def replaces_print(model: ScriptModel) -> bool:
    """Whether the script, or a workspace helper one of its calls runs, assigns
    ``builtins.print``."""
    return bool(override_sites(model))


def override_sites(model: ScriptModel) -> list[ast.AST]:
    """The assignments to ``builtins.print`` and the calls of workspace helpers that make
    one, in source order."""
    return model.memo(("workspace_print", "sites"), lambda: _sites(model))


def printed_after_override(model: ScriptModel, call: ast.Call) -> bool:
    """Whether the ``print`` call runs with print already replaced: an override site in
    another function (the entry calls the setup first, as FAIR-style scripts do), or one
    earlier in the same function. A print above the override in its own function runs on
    every replica."""
    sites = override_sites(model)
    scope = model.enclosing_function(call)
    return any(
        model.enclosing_function(site) is not scope or site.lineno < call.lineno  # type: ignore[attr-defined]
        for site in sites
    )


def _sites(model: ScriptModel) -> list[ast.AST]:
    sites: list[ast.AST] = []
    for node in model.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        if any(_is_script_print_slot(model, t) for t in node.targets):
            sites.append(node)
    for call in model.calls:
        helper = helper_target(model, call)
        if helper is not None and _helper_replaces(helper.path, helper.function):
            sites.append(call)
    return sorted(sites, key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]


def _is_script_print_slot(model: ScriptModel, target: ast.AST) -> bool:
    # ``__builtins__`` needs no import: it is the builtins module in the script run as main.
    name = model.qualname(target) or dotted(target)
    return name in PRINT_SLOTS


def _helper_replaces(path: Path, function: str) -> bool:
    module = parsed_module(path)
    if module is None or "print" not in module.source:
        return False
    key = (str(module.path), function)
    hit = _cache.get(key)
    if hit is not None and hit[0] is module.tree:
        return hit[1]
    fn = module.functions.get(function)
    found = fn is not None and _reaches_override(module, fn, set(), 0)
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[key] = (module.tree, found)
    return found


def _reaches_override(module: ParsedModule, fn: FunctionNode, seen: set[str], depth: int) -> bool:
    seen.add(fn.name)
    callees: list[FunctionNode] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and any(_is_print_slot(module, t) for t in node.targets):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            target = module.functions.get(node.func.id)
            if target is not None and target.name not in seen:
                callees.append(target)
    if depth >= MAX_DEPTH:
        return False
    return any(_reaches_override(module, c, seen, depth + 1) for c in callees)


def _is_print_slot(module: ParsedModule, target: ast.AST) -> bool:
    """``builtins.print`` / ``__builtin__.print``, the module spelled as the file imports it."""
    if not (
        isinstance(target, ast.Attribute)
        and target.attr == "print"
        and isinstance(target.value, ast.Name)
    ):
        return False
    name = target.value.id
    return module.imports.get(name, name) in BUILTIN_MODULES
