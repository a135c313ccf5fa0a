"""XLA501: a workspace module the script imports calls torch_xla APIs that 2.9 removed.

An already-XLA script (AMCLR's ``train2.py``, held-out 40) is written for the current API, but
the model it imports from ``src/amclr/model.py`` still calls ``xm.xrt_world_size()`` and
``xm.get_ordinal()``: the import works, and the first forward raises AttributeError. The
script's own lines are all correct, so nothing in it would point there. Named at the import
(inside a function too: model classes are often imported under an option), once per module,
with no fix: the change belongs in that module (``xla-lens check`` on it rewrites each call).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ...semantic.model import ScriptModel
from ...semantic.workspace import module_file
from ...semantic.workspace_calls import parsed_module
from ..base import Finding, Severity
from .library_autocast import display_path

SHOWN = 3


def sibling_removed_apis(
    model: ScriptModel, code: str, removed: Callable[[ScriptModel], Iterable[Finding]]
) -> Iterator[Finding]:
    """``removed(module_model)``: the removed-API findings of a module (XLA501's own check)."""
    if not model.path or model.path.startswith("<"):
        return
    said: set[Path] = set()
    for imp in model.import_nodes:
        for module, level in _modules(imp):
            path = module_file(model.path, module, level) if module or level else None
            if path is None or Path(path) in said:
                continue
            said.add(Path(path))
            found = _removed_calls(Path(path), removed)
            if not found:
                continue
            where = display_path(model.path, Path(path))
            shown = "; ".join(f"line {line}: {what}" for line, what in found[:SHOWN])
            more = f"; and {len(found) - SHOWN} more there" if len(found) > SHOWN else ""
            yield Finding(
                code,
                f"{where}, imported here, calls torch_xla APIs that 2.9 removed ({shown}{more}): "
                "AttributeError when that code runs",
                model.span(imp),
                Severity.WARNING,
                manual=f"Convert {where} too (`xla-lens check {where}` rewrites each call to its "
                "torch_xla 2.x replacement): the change belongs in that file.",
            )
            break


def _modules(imp: ast.Import | ast.ImportFrom) -> list[tuple[str, int]]:
    if isinstance(imp, ast.Import):
        return [(a.name, 0) for a in imp.names]
    return [(imp.module or "", imp.level)]


def _removed_calls(
    path: Path, removed: Callable[[ScriptModel], Iterable[Finding]]
) -> list[tuple[int, str]]:
    parsed = parsed_module(path)
    if parsed is None or "torch_xla" not in parsed.source:
        return []
    other = ScriptModel(parsed.source, parsed.tree, "<sibling>")
    out = []
    for f in removed(other):
        if f.severity == Severity.ERROR and "was removed" in f.message:
            out.append((f.span.start.line + 1, f.message.split(" raises AttributeError", 1)[0]))
    return sorted(set(out))
