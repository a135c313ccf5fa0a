"""A device the script imports from another module of the workspace (held-out 58's AWADA:
``from awada.config import DEFAULT_DEVICE`` where config.py says ``DEFAULT_DEVICE = "cuda" if
torch.cuda.is_available() else "cpu"``, then ``torch.device(... DEFAULT_DEVICE)``): the picker
is in that file, so nothing in the script shows it, and on an XLA host the script runs on the
CPU. XLA118 names it at the script's first read of the name, with no fix: the fix belongs in
that file."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel
from ...semantic.workspace import module_file
from ...semantic.workspace_calls import _bindings, _is_library, parsed_module
from ..base import Finding, Severity
from .helper_evidence import module_evidence
from .library_autocast import display_path


def _binding_lines(tree: ast.Module, name: str) -> tuple[int, int] | None:
    """The lines of the last top-level assignment of ``name`` in ``tree``."""
    found = None
    for stmt in tree.body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets = [stmt.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found = (stmt.lineno, stmt.end_lineno or stmt.lineno)
    return found


def imported_device_findings(model: ScriptModel, code: str, target: str) -> Iterator[Finding]:
    bindings = model.memo(("workspace_calls", "bindings"), lambda: _bindings(model))
    reads: dict[str, ast.Name] = {}
    for node in model.nodes_of(ast.Name):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            first = reads.get(node.id)
            if first is None or (node.lineno, node.col_offset) < (first.lineno, first.col_offset):
                reads[node.id] = node
    attribute_reads = _module_attribute_reads(model)
    for local, (module, level, imported) in bindings.items():
        if _is_library(module, level):
            continue
        if imported is None:
            # ``import world`` then ``world.device`` (held-out 67's LightGCN, whose world.py
            # picks "cuda" or the CPU): each attribute first read is the imported name.
            named = [
                (f"{local}.{attr}", attr, node)
                for (root, attr), node in attribute_reads.items()
                if root == local
            ]
        else:
            named = [(local, imported, reads[local])] if local in reads else []
        for shown, name, read in named:
            yield from _finding_for(model, code, target, module, level, shown, name, read)


def _module_attribute_reads(model: ScriptModel) -> dict[tuple[str, str], ast.Attribute]:
    """(module name, attribute) -> the first ``module.attribute`` read."""
    out: dict[tuple[str, str], ast.Attribute] = {}
    for node in model.nodes_of(ast.Attribute):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name)
        ):
            key = (node.value.id, node.attr)
            first = out.get(key)
            if first is None or (node.lineno, node.col_offset) < (first.lineno, first.col_offset):
                out[key] = node
    return out


def _finding_for(
    model: ScriptModel,
    code: str,
    target: str,
    module: str,
    level: int,
    local: str,
    imported: str,
    read: ast.AST,
) -> Iterator[Finding]:
    path = module_file(model.path, module, level)  # type: ignore[arg-type]
    parsed = parsed_module(path) if path is not None else None
    lines = _binding_lines(parsed.tree, imported) if parsed is not None else None
    if path is not None and lines is not None:
        evidence = [
            e
            for e in module_evidence(path, target).lines
            if e.code == "XLA101" and lines[0] <= e.line <= lines[1]
        ]
        if evidence:
            where = display_path(model.path, path)
            e = evidence[0]
            yield Finding(
                code,
                f"`{local}` comes from {where}, where line {e.line} sets it: {e.what} (XLA101); "
                "converting this script alone leaves that device as it is",
                model.span(read),
                Severity.WARNING,
                manual=f"Convert {where} itself (`xla-lens check {where}` lists the site with "
                "its fix): the change belongs in that file, not here.",
            )
