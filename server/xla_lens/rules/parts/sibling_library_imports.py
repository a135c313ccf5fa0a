"""XLA405: a workspace module imported at the top of the script that itself imports a CUDA-only
library at its top (FastChat's ``from fastchat.train.llama_flash_attn_monkey_patch import
replace_llama_attn_with_flash_attn``, whose module imports ``flash_attn`` on load, held-out 38).

flash-attn, xformers, bitsandbytes, apex... do not install on an XLA host, so that import fails
before the script's first line runs, even when the option that would use the module is off.
The fix belongs where the module is used (import it under its option) or in the module (guard
its import): advice, no fix. Only unguarded module-level imports on both sides count: an
import inside ``try:``/``if`` or a function is the script's own way to stay optional.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from ...semantic.model import ScriptModel
from ...semantic.workspace import module_file
from ...semantic.workspace_calls import parsed_module
from ..base import Finding, Severity
from .cuda_libraries import CUDA_LIBRARIES

MANUAL = (
    "Import it only where it is used, under the option that turns it on (e.g. inside `if "
    "training_args.flash_attn:`), or guard the library's import in that module with "
    "try/except ImportError; on XLA use torch.nn.functional.scaled_dot_product_attention."
)


def sibling_library_imports(model: ScriptModel, code: str) -> Iterator[Finding]:
    direct = {
        (a.name if isinstance(imp, ast.Import) else imp.module or "").split(".")[0]
        for imp in model.import_nodes
        for a in imp.names
    }
    for stmt in model.tree.body:
        if not isinstance(stmt, ast.Import | ast.ImportFrom):
            continue
        for module, level in _modules(stmt):
            path = module_file(model.path, module, level) if module or level else None
            if path is None:
                continue
            found = _library_import(path)
            if found is None or found[0] in direct:
                continue
            library, line = found
            yield Finding(
                code,
                f"this import runs {Path(path).name}, which imports {library} at its top (line "
                f"{line}): {CUDA_LIBRARIES[library]}; where it is not installed (an XLA host) "
                "this import fails before the script starts, whatever its options say",
                model.span(stmt),
                Severity.WARNING,
                manual=MANUAL,
            )
            break


def _modules(stmt: ast.Import | ast.ImportFrom) -> list[tuple[str, int]]:
    if isinstance(stmt, ast.Import):
        return [(a.name, 0) for a in stmt.names]
    return [(stmt.module or "", stmt.level)]


def _library_import(path: Path) -> tuple[str, int] | None:
    """The first CUDA-only library the module imports unguarded at its top, and the line."""
    parsed = parsed_module(Path(path))
    if parsed is None:
        return None
    for stmt in parsed.tree.body:
        if isinstance(stmt, ast.Import):
            names = [a.name for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level:
            names = [stmt.module or ""]
        else:
            continue
        for name in names:
            root = name.split(".")[0]
            if root in CUDA_LIBRARIES:
                return root, stmt.lineno
    return None
