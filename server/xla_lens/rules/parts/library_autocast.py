"""XLA118's findings about code out of reach: a library's autocast helper used as a context
(``with smart_amp_autocast(amp):``), and how a module of the workspace is named in a message."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from ...semantic.model import ScriptModel
from ...semantic.workspace import package_root
from ...semantic.workspace_calls import LibraryOrigin, library_origin
from ..base import Finding, Severity

# Libraries whose autocast helpers know the XLA device (or that XLA102 reads itself).
XLA_AWARE = frozenset(
    {"torch", "torch_xla", "accelerate", "lightning", "pytorch_lightning", "lightning_fabric"}
)


def display_path(script: str, module: Path) -> str:
    """``utils/util.py`` for a module beside or above the script, else the full path. For a
    script inside a package, relative to the folder above its outermost package (where
    Python imports it from, and where ``xla-lens check PATH`` is run: YOLOX's
    ``yolox/data/data_prefetcher.py`` from ``yolox/core/trainer.py``, held-out 31)."""
    try:
        here = Path(script).resolve().parent
        target = module.resolve()
        top = package_root(here)
        for base in (top, here, *list(here.parents)[:3]):
            if target.is_relative_to(base):
                return target.relative_to(base).as_posix()
    except (ValueError, OSError):
        pass
    return str(module)


def library_autocasts(model: ScriptModel, code: str) -> Iterator[Finding]:
    """``with smart_amp_autocast(amp):`` where the name is a library's autocast helper
    (imported straight, or re-exported by a workspace module): its body is out of reach, and
    such helpers autocast on CUDA unless told otherwise. Said, with no fix."""
    for node in model.nodes_of(ast.With, ast.AsyncWith):
        for item in node.items:  # type: ignore[attr-defined]
            call = item.context_expr
            if not isinstance(call, ast.Call):
                continue
            origin = library_origin(model, call)
            if origin is None or "autocast" not in origin.name.lower():
                continue
            if origin.module.split(".")[0] in XLA_AWARE:
                continue
            yield _library_finding(model, call, origin, code)


def _library_finding(
    model: ScriptModel, call: ast.Call, origin: LibraryOrigin, code: str
) -> Finding:
    shown = call.func.id if isinstance(call.func, ast.Name) else origin.name
    source = f"`{origin.module}.{origin.name}`"
    if origin.via is not None:
        source += f", re-exported by {display_path(model.path, origin.via)}"
    message = (
        f"{shown}() is {source}: an autocast helper outside the files xla-lens can read; such "
        "helpers usually autocast on CUDA unless given the device type, a silent no-op on XLA "
        "tensors (the step then runs in full precision)"
    )
    manual = (
        "Check which device type it autocasts; on XLA use "
        '`torch.autocast("xla", dtype=torch.bfloat16)` (or pass the helper the XLA device type).'
    )
    return Finding(code, message, model.span(call), Severity.WARNING, manual=manual)
