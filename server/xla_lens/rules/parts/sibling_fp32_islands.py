"""Regions the project's own modules keep in fp32 by switching CUDA autocast off (XLA102's
review): ``@autocast(False)`` on DeLA's ``calc_pwd`` (held-out 87: pairwise distances for a
kNN search, with ``autocast`` from ``torch.cuda.amp``), ``with torch.cuda.amp.autocast(
enabled=False):``, ``@custom_fwd(cast_inputs=torch.float32)``.

Those switches name CUDA autocast only. Once the script's ``autocast()`` becomes
``torch.autocast("xla", dtype=torch.bfloat16)``, the region runs under XLA autocast in
bfloat16 (measured by the probe: the distances' error against fp64 went from 0.012 to 262, and
three neighbours in four changed; nothing raised). In the script's own file XLA102 converts
such a switch with the rest; in another module it must be converted there, so the script's
fix waits for review and names it.

The modules the script imports from the workspace, and the ones they import (two levels), are
read as text from disk (never imported or run), cached per file version.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ...semantic.diskread import read_regular
from ...semantic.model import ScriptModel
from ...semantic.workspace import MAX_BYTES, module_file

MAX_FILES = 24
OFF = re.compile(
    r"autocast\(\s*(?:False|enabled\s*=\s*False)"
    r"|autocast\(\s*(?:device_type\s*=\s*)?['\"]cuda['\"]\s*,\s*enabled\s*=\s*False"
    r"|custom_fwd\("
)
_cache: dict[tuple[str, int, int], tuple[tuple[tuple[int, str], ...], tuple[Path, ...]]] = {}
_CACHE_LIMIT = 512


def fp32_islands(model: ScriptModel) -> list[tuple[Path, int, str]]:
    """(file, 1-based line, its text) of each CUDA-autocast-off switch in the workspace modules
    the script imports (and theirs), in the order found."""
    if not model.path or model.path.startswith("<"):
        return []
    return model.memo(fp32_islands, lambda: _search(model))


def _search(model: ScriptModel) -> list[tuple[Path, int, str]]:
    out: list[tuple[Path, int, str]] = []
    seen: set[Path] = set()
    imports = list(model.nodes_of(ast.Import, ast.ImportFrom))
    todo = [(f, 1) for f in _imported_files(model.path, imports)]
    while todo and len(seen) < MAX_FILES:
        path, depth = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        found, imported = _switches(path)
        out += [(path, line, text) for line, text in found]
        if depth < 2:
            todo += [(f, depth + 1) for f in imported]
    return out


def _imported_files(path: str, nodes: list[ast.AST]) -> list[Path]:
    files: list[Path] = []
    for node in nodes:
        modules: list[tuple[str, int]] = []
        if isinstance(node, ast.ImportFrom):
            modules.append((node.module or "", node.level))
            modules += [
                (f"{node.module}.{a.name}" if node.module else a.name, node.level)
                for a in node.names
            ]
        elif isinstance(node, ast.Import):
            modules += [(a.name, 0) for a in node.names]
        for module, level in modules:
            if module.split(".")[0] in {"torch", "torchvision", "numpy"}:
                continue
            try:
                found = module_file(path, module, level)
            except (OSError, ValueError):
                found = None
            if found is not None and found not in files and str(found) != path:
                files.append(found)
    return files


def _switches(path: Path) -> tuple[tuple[tuple[int, str], ...], tuple[Path, ...]]:
    """The switches of ``path`` and the workspace files it imports (once per file version)."""
    try:
        st = path.stat()
    except OSError:
        return (), ()
    key = (str(path), st.st_size, st.st_mtime_ns)
    found = _cache.get(key)
    if found is None:
        try:
            text = read_regular(path, MAX_BYTES).decode("utf-8", errors="replace")
            tree = ast.parse(text)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            text, tree = "", None
        switches: tuple[tuple[int, str], ...] = ()
        if "cuda" in text:
            switches = tuple(
                (i + 1, line.strip())
                for i, line in enumerate(text.splitlines())
                if OFF.search(line) and not line.lstrip().startswith("#")
            )
        imported = (
            tuple(_imported_files(str(path), list(ast.walk(tree)))) if tree is not None else ()
        )
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        found = _cache[key] = (switches, imported)
    return found


def clear_cache() -> None:
    _cache.clear()


def islands_reason(model: ScriptModel, islands: list[tuple[Path, int, str]]) -> str:
    here = Path(model.path).resolve().parent
    shown = []
    for path, line, text in islands[:2]:
        try:
            name = str(path.resolve().relative_to(here))
        except ValueError:
            name = path.name
        shown.append(f"{name} line {line} `{text[:50]}`")
    more = f" and {len(islands) - 2} more" if len(islands) > 2 else ""
    return (
        f"the project's modules keep regions in fp32 by switching CUDA autocast off "
        f"({'; '.join(shown)}{more}): that switch does not turn XLA autocast off, so under "
        'torch.autocast("xla") those regions run in bfloat16 too; convert them there '
        '(torch.autocast("xla", enabled=False)) with this change'
    )


__all__ = ["clear_cache", "fp32_islands", "islands_reason"]
