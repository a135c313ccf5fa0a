"""Loaders handed out by a function of another module of the project.

``dloader, n = create_train_dloader(path, bs, device=device)`` in a script written for XLA,
where ``data.py``'s ``create_train_dloader`` wraps its DataLoader in ``pl.MpDeviceLoader``
when the device is XLA (held-out 66's timm-face TPU script): the loop's batches come from an
XLA loader, which syncs every iteration, though nothing in the script itself says so. Read on
disk, never imported or run.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .node_helpers import dotted
from .workspace_calls import helper_target, parsed_module

if TYPE_CHECKING:
    from .model import ScriptModel

# How a module spells torch_xla's device loaders, whatever it imported them as.
XLA_LOADER_CLASSES = frozenset({"MpDeviceLoader", "ParallelLoader"})


def from_workspace_xla_loader(model: ScriptModel, expr: ast.AST | None) -> str | None:
    """How the script names the workspace function whose result ``expr`` is (directly, or a
    name assigned or unpacked from its call) when that function builds a torch_xla device
    loader somewhere in its body; None otherwise."""
    for call in _producing_calls(model, expr):
        target = helper_target(model, call)
        if target is None:
            continue
        module = parsed_module(target.path)
        fn = module.functions.get(target.function) if module is not None else None
        if fn is not None and _builds_xla_loader(fn):
            return target.shown
    return None


def _producing_calls(model: ScriptModel, expr: ast.AST | None) -> list[ast.Call]:
    while isinstance(expr, ast.Call) and dotted(expr.func) in {"iter", "itertools.cycle", "cycle"}:
        expr = expr.args[0] if expr.args else None
    if isinstance(expr, ast.Call):
        return [expr]
    if not isinstance(expr, ast.Name):
        return []
    calls = []
    for assign in model.nodes_of(ast.Assign):
        assert isinstance(assign, ast.Assign)
        if isinstance(assign.value, ast.Call) and any(
            _binds(target, expr.id) for target in assign.targets
        ):
            calls.append(assign.value)
    return calls


def _binds(target: ast.expr, name: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == name
    if isinstance(target, ast.Tuple | ast.List):
        return any(isinstance(e, ast.Name) and e.id == name for e in target.elts)
    return False


def _builds_xla_loader(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in XLA_LOADER_CLASSES or name == "per_device_loader":
            return True
    return False
