"""XLA501: torch_xla modules that 2.9 no longer has, imported (the import itself fails).

``import torch_xla.amp.grad_scaler`` raises ModuleNotFoundError on torch_xla 2.9 (measured):
the XLA scaler is ``torch.amp.GradScaler("xla")`` now. MLPerf's UNet3D XLA trainer (held-out
70) imports the module and builds ``torch_xla.amp.grad_scaler.GradScaler()``: XLA501's call
mapping rewrites the call, and without this the rewritten file still stopped at its import.

The fix removes a bare ``import torch_xla.amp.grad_scaler`` only where it provably changes
nothing but the failure: every read of the dotted name is a ``GradScaler(...)`` call that
XLA501 rewrites (so nothing reads the module once that fix is in), and ``torch_xla`` stays
bound by another import of the same scope (the removed statement bound it too). Otherwise the
finding says what to do.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ...semantic.model import ScriptModel
from ...semantic.node_helpers import dotted
from ..base import Finding, Fix, RemoveStatement, Severity

# module -> what replaces it
REMOVED = {"torch_xla.amp.grad_scaler": 'torch.amp.GradScaler("xla")'}


def _message(module: str) -> str:
    return (
        f"{module} no longer exists in torch_xla 2.x (2.9 raises ModuleNotFoundError at this "
        f"import, measured): the script stops before it starts; use {REMOVED[module]}"
    )


def removed_module_imports(
    model: ScriptModel, code: str, rewritten: Callable[[ast.Call], bool]
) -> Iterator[Finding]:
    """``rewritten(call)``: whether XLA501's call mapping rewrites that call with a fix."""
    if "torch_xla.amp" not in model.source:
        return
    for node in model.nodes_of(ast.Import, ast.ImportFrom):
        module = _removed_module(node)  # type: ignore[arg-type]
        if module is None:
            continue
        fix = None
        if _removable(model, node, module, rewritten):  # type: ignore[arg-type]
            fix = Fix(f"Remove the import of {module}", (RemoveStatement(model.span(node)),))
        yield Finding(
            code,
            _message(module),
            model.span(node),
            Severity.ERROR,
            fix=fix,
            manual=None
            if fix
            else f"Remove the import and build the scaler as {REMOVED[module]} (XLA501's fix at "
            "each GradScaler call writes that).",
        )


def _removed_module(node: ast.Import | ast.ImportFrom) -> str | None:
    if isinstance(node, ast.Import):
        return next((a.name for a in node.names if a.name in REMOVED), None)
    if node.level:
        return None
    module = node.module or ""
    if module in REMOVED:
        return module
    return next((f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in REMOVED), None)


def _removable(
    model: ScriptModel,
    node: ast.Import | ast.ImportFrom,
    module: str,
    rewritten: Callable[[ast.Call], bool],
) -> bool:
    if not isinstance(node, ast.Import) or len(node.names) != 1 or node.names[0].asname:
        return False
    scope = model.parent(node)
    others = [
        n
        for n in model.nodes_of(ast.Import)
        if n is not node
        and model.parent(n) is scope
        and any(a.asname is None and a.name.split(".")[0] == "torch_xla" for a in n.names)  # type: ignore[attr-defined]
    ]
    if not others:
        return False
    for name in model.name_nodes("torch_xla"):
        chain = _outermost_attribute(model, name)
        text = dotted(chain) or ""
        if not (text == module or text.startswith(module + ".")):
            continue
        call = model.parent(chain)
        if not (isinstance(call, ast.Call) and call.func is chain and rewritten(call)):
            return False
    return True


def _outermost_attribute(model: ScriptModel, node: ast.AST) -> ast.AST:
    parent = model.parent(node)
    while isinstance(parent, ast.Attribute) and parent.value is node:
        node, parent = parent, model.parent(parent)
    return node
