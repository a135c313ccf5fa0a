"""XLA120 for CUDA extensions a project compiles with its ``setup.py``.

PointPillars (held-out 93) declares ``CUDAExtension(name='pointpillars.ops.voxel_op',
sources=[..., 'voxelization_cuda.cu'])`` in ``setup.py``; ``pointpillars/ops/voxel_module.py``
imports ``hard_voxelize`` from it, and the model's forward calls it every step. On an XLA host
there is no CUDA toolkit to build it (the import raises where it was never built) and its
kernels dispatch on CUDA or CPU tensors, never XLA ones. Read from disk, never imported or
built: the ``setup.py`` next to the script or up to two folders above it, and the top-level
imports (outside ``try``, which is the project's fallback) of the workspace modules an import
of the script runs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from ...semantic.diskread import read_regular
from ...semantic.workspace import MAX_BYTES
from ...semantic.workspace_calls import parsed_module
from ...semantic.workspace_imports import import_targets

# setup.py path -> (size, mtime, {extension module: line})
_cache: dict[Path, tuple[int, int, dict[str, int]]] = {}
LEVELS_UP = 2


@dataclass(frozen=True)
class ExtensionImport:
    module: str  # ``pointpillars.ops.voxel_op``
    setup_line: int
    importer: Path  # the workspace module holding the import
    line: int  # 1-based, in ``importer``


def project_cuda_extensions(script: Path) -> tuple[Path, dict[str, int]] | None:
    """The project's ``setup.py`` folder and its CUDA extensions (module name → line)."""
    folder = script.parent
    for _ in range(LEVELS_UP + 1):
        setup = folder / "setup.py"
        if setup.is_file():
            found = _extensions(setup)
            return (folder, found) if found else None
        if folder.parent == folder:
            break
        folder = folder.parent
    return None


def _extensions(setup: Path) -> dict[str, int]:
    try:
        st = setup.stat()
    except OSError:
        return {}
    cached = _cache.get(setup)
    if cached is not None and cached[:2] == (st.st_size, st.st_mtime_ns):
        return cached[2]
    found: dict[str, int] = {}
    try:
        text = read_regular(setup, MAX_BYTES).decode("utf-8", errors="replace")
    except OSError:
        text = ""
    if "CUDAExtension" in text:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Call) and _called(node.func) == "CUDAExtension":
                name = _extension_name(node)
                if name:
                    found.setdefault(name, node.lineno)
    if len(_cache) > 64:
        _cache.clear()
    _cache[setup] = (st.st_size, st.st_mtime_ns, found)
    return found


def _called(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _extension_name(call: ast.Call) -> str | None:
    value = next((k.value for k in call.keywords if k.arg == "name"), None)
    if value is None and call.args:
        value = call.args[0]
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None


def extension_imports(
    root: Path, extensions: dict[str, int], path: Path, tree: ast.Module
) -> list[ExtensionImport]:
    """The imports of extension modules that ``tree`` (the module at ``path``) runs when
    imported: top-level statements and ``if``/``with`` blocks, not ``try`` bodies."""
    package = _package_of(root, path)
    out: list[ExtensionImport] = []
    stack = list(reversed(tree.body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.If | ast.With):
            stack.extend(reversed([*stmt.body, *getattr(stmt, "orelse", [])]))
            continue
        for name in _imported_modules(stmt, package):
            if name in extensions:
                out.append(ExtensionImport(name, extensions[name], path, stmt.lineno))
                break
    return out


def _package_of(root: Path, path: Path) -> list[str] | None:
    try:
        return list(path.resolve().relative_to(root.resolve()).parts[:-1])
    except ValueError:
        return None


def _imported_modules(stmt: ast.stmt, package: list[str] | None) -> list[str]:
    if isinstance(stmt, ast.Import):
        return [a.name for a in stmt.names]
    if not isinstance(stmt, ast.ImportFrom):
        return []
    if stmt.level:
        if package is None or stmt.level - 1 > len(package):
            return []
        base = package[: len(package) - (stmt.level - 1)]
        module = ".".join([*base, *([stmt.module] if stmt.module else [])])
    else:
        module = stmt.module or ""
    names = [module] if module else []
    return names + [f"{module}.{a.name}" if module else a.name for a in stmt.names]


# How far an import is followed to an op package that builds its extension in place.
INPLACE_DEPTH = 6
INPLACE_MODULES = 80


@dataclass(frozen=True)
class InPlaceExtension:
    hit: ExtensionImport
    setup: Path  # the op folder's setup.py


def inplace_extension_import(
    script: Path, node: ast.Import | ast.ImportFrom
) -> InPlaceExtension | None:
    """A CUDA extension an op package builds in its own folder (``python setup.py build_ext
    --inplace``) that importing ``node`` reaches, however deep: aanet's ``import nets`` runs
    nets/aggregation → nets/deform → nets/deform_conv/deform_conv.py, whose ``from . import
    deform_conv_cuda`` is declared by nets/deform_conv/setup.py (held-out 143). Imports inside
    ``try`` are the project's fallback and are not followed to an extension."""
    seen: set[Path] = set()
    frontier = import_targets(script, node)
    for _ in range(INPLACE_DEPTH):
        following: list[Path] = []
        for path in frontier:
            if path in seen or len(seen) >= INPLACE_MODULES:
                continue
            seen.add(path)
            parsed = parsed_module(path)
            if parsed is None:
                continue
            # The op package's setup.py beside the module or up to two folders above it
            # (point-transformer's lib/pointops/setup.py for lib/pointops/functions/pointops.py's
            # ``import pointops_cuda``, held-out 149).
            for folder in list(path.parents)[: LEVELS_UP + 1]:
                setup = folder / "setup.py"
                if setup.is_file():
                    extensions = _extensions(setup)
                    found = extension_imports(folder, extensions, path, parsed.tree)
                    if found:
                        return InPlaceExtension(found[0], setup)
            for inner in _unguarded_imports(parsed.tree):
                following += [p for p in import_targets(path, inner) if p not in seen]
        frontier = following
    return None


def _unguarded_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when imported, outside ``try`` (Swin's ``try: from
    kernels.window_process... except: WindowProcess = None`` is the project's fallback)."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.stmt] = list(reversed(tree.body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            out.append(stmt)
        elif isinstance(stmt, ast.If | ast.With):
            stack.extend(reversed([*stmt.body, *getattr(stmt, "orelse", [])]))
    return out
