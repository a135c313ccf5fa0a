"""XLA501: torch_xla modules 2.9 moved, imported under their old path (the import itself fails).

``import torch_xla.experimental.xla_sharding as xs`` and ``from
torch_xla.experimental.xla_sharded_tensor import XLAShardedTensor`` raise ModuleNotFoundError on
torch_xla 2.9 (measured; held-out 63's already-SPMD LLaVA trainer could not be imported after
its other fixes): the files moved to ``torch_xla.distributed.spmd``. The safe fix writes the
new path of the same file where the import binds an alias or names (the code reading them is
unchanged); a bare ``import torch_xla.experimental.xla_sharding`` read through its full dotted
name is said, with no fix (every read would change).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel
from ..base import Finding, Fix, ReplaceStatement, Severity

# old module -> the same file's path in torch_xla 2.9
MOVED = {
    "torch_xla.experimental.xla_sharding": "torch_xla.distributed.spmd.xla_sharding",
    "torch_xla.experimental.xla_sharded_tensor": "torch_xla.distributed.spmd.xla_sharded_tensor",
}


def _message(old: str, new: str) -> str:
    return (
        f"{old} moved to {new} in torch_xla 2.x (2.9 raises ModuleNotFoundError at this "
        "import, measured): the script stops before it starts"
    )


def _rewritten(node: ast.Import | ast.ImportFrom) -> str | None:
    """The statement with the moved modules' new paths, or None when a bare import (read
    through its dotted name) or a relative import is among its names."""
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return None
        names = ", ".join(f"{a.name} as {a.asname}" if a.asname else a.name for a in node.names)
        module = node.module or ""
        if module in MOVED:
            return f"from {MOVED[module]} import {names}"
        parts = []
        for a in node.names:
            full = f"{module}.{a.name}"
            if full not in MOVED:
                return None
            parent, _, last = MOVED[full].rpartition(".")
            parts.append(f"from {parent} import {last} as {a.asname or a.name}")
        return "\n".join(parts)
    out = []
    for a in node.names:
        if a.name in MOVED and a.asname is None:
            return None
        target = MOVED.get(a.name, a.name)
        out.append(f"{target} as {a.asname}" if a.asname else target)
    return "import " + ", ".join(out)


def moved_module_imports(model: ScriptModel, code: str) -> Iterator[Finding]:
    if "torch_xla.experimental" not in model.source:
        return
    for node in model.nodes_of(ast.Import, ast.ImportFrom):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            olds = (
                [module]
                if module in MOVED
                else [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in MOVED]
            )
        else:
            olds = [a.name for a in node.names if a.name in MOVED]  # type: ignore[attr-defined]
        if not olds or (isinstance(node, ast.ImportFrom) and node.level):
            continue
        old = olds[0]
        message = _message(old, MOVED[old])
        code_text = _rewritten(node)  # type: ignore[arg-type]
        if code_text is None or node.lineno != node.end_lineno:
            yield Finding(
                code,
                message,
                model.span(node),
                Severity.ERROR,
                manual=f"Import {MOVED[old]} instead (under an alias: `import {MOVED[old]} as "
                "xs`) and read its names through that alias.",
            )
            continue
        fix = Fix(f"Import {MOVED[old]}", (ReplaceStatement(model.span(node), code_text),))
        yield Finding(code, message, model.span(node), Severity.ERROR, fix=fix)
