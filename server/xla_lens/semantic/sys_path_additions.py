"""Folders a script puts on ``sys.path`` before importing its own modules, so that
``from core.function import train`` is followed into them (held-out 43, HRNet: ``import
_init_paths`` runs ``sys.path.insert(0, osp.join(osp.dirname(__file__), '..', 'lib'))``).

Read, never run: the path expressions are evaluated on the syntax tree, for the spellings
training repositories use (``__file__``, ``os.path.dirname/abspath/realpath/join``,
``pathlib.Path(...).parent / "lib"``, a module-level name bound once to such an expression,
and a helper of the module that inserts its parameter, ``add_path(lib_path)``). Anything else
adds no folder: a module out of reach gives a finding with no fix, never a wrong one.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from .node_helpers import dotted

# The module detectron-era repositories import for its side effect on sys.path.
PATH_SETUP_MODULE = "_init_paths.py"
MAX_BYTES = 200_000
_CACHE_LIMIT = 256
# (the folders a file puts on sys.path, at the front or not; whether it imports _init_paths)
Additions = tuple[tuple[tuple[Path, bool], ...], bool]
_cache: dict[tuple[str, int, int], Additions] = {}

PATH_CALLS = frozenset({"sys.path.insert", "sys.path.append"})
DIRNAME = frozenset({"os.path.dirname", "osp.dirname", "path.dirname"})
SAME_PATH = frozenset(
    {
        "os.path.abspath",
        "os.path.realpath",
        "os.path.normpath",
        "osp.abspath",
        "osp.realpath",
        "osp.normpath",
        "str",
        "Path",
        "pathlib.Path",
    }
)
JOIN = frozenset({"os.path.join", "osp.join", "path.join"})


def added_folders(script: Path) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """Existing folders the script (or the ``_init_paths.py`` beside it) puts on sys.path:
    (inserted at the front, appended)."""
    front: list[Path] = []
    back: list[Path] = []
    own, imports_setup = _additions(script)
    files = [own]
    if imports_setup:  # ``import _init_paths``: only then does its sys.path work run
        files.append(_additions(script.parent / PATH_SETUP_MODULE)[0])
    for found in files:
        for folder, first in found:
            chosen = front if first else back
            if folder not in front and folder not in back:
                chosen.append(folder)
    return tuple(front), tuple(back)


def _additions(file: Path) -> Additions:
    """(the folders ``file`` puts on sys.path, whether it imports ``_init_paths``)."""
    try:
        st = file.stat()
    except OSError:
        return (), False
    key = (str(file), st.st_size, st.st_mtime_ns)
    if key in _cache:
        return _cache[key]
    found: Additions = ((), False)
    if st.st_size <= MAX_BYTES:
        try:
            tree = ast.parse(file.read_text(encoding="utf-8", errors="replace"))
            found = (tuple(_evaluate_additions(tree, file)), _imports_setup(tree))
        except (SyntaxError, ValueError, RecursionError, OSError):
            found = ((), False)
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[key] = found
    return found


def _imports_setup(tree: ast.Module) -> bool:
    setup = PATH_SETUP_MODULE.removesuffix(".py")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == setup for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == setup and not node.level:
            return True
    return False


def _evaluate_additions(tree: ast.Module, file: Path) -> list[tuple[Path, bool]]:
    names = _module_values(tree)
    inserting = _inserting_helpers(tree)
    out: list[tuple[Path, bool]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func)
        if name in PATH_CALLS and node.args:
            given = node.args[-1]
            first = name == "sys.path.insert"
        elif isinstance(node.func, ast.Name) and node.func.id in inserting and node.args:
            given = node.args[0]
            first = inserting[node.func.id]
        else:
            continue
        path = _path_of(given, file, names, 0)
        if path is not None:
            folder = Path(os.path.normpath(path))
            if folder.is_dir() and all(folder != f for f, _ in out):
                out.append((folder, first))
    return out


def _module_values(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level names bound exactly once."""
    seen: dict[str, list[ast.expr]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                seen.setdefault(target.id, []).append(stmt.value)
    return {name: values[0] for name, values in seen.items() if len(values) == 1}


def _inserting_helpers(tree: ast.Module) -> dict[str, bool]:
    """``def add_path(path): ... sys.path.insert(0, path)``: functions of the module that put
    their first parameter on sys.path (True: at the front)."""
    out: dict[str, bool] = {}
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef) or not stmt.args.args:
            continue
        first = stmt.args.args[0].arg
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Call)
                and dotted(node.func) in PATH_CALLS
                and node.args
                and isinstance(node.args[-1], ast.Name)
                and node.args[-1].id == first
            ):
                out[stmt.name] = dotted(node.func) == "sys.path.insert"
    return out


def _path_of(node: ast.expr, file: Path, names: dict[str, ast.expr], depth: int) -> str | None:
    if depth > 8:
        return None
    deeper = depth + 1
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return str(file)
        value = names.get(node.id)
        return None if value is None else _path_of(value, file, names, deeper)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if os.path.isabs(node.value) else str(file.parent / node.value)
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _path_of(node.value, file, names, deeper)
        return None if inner is None else os.path.dirname(inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left = _path_of(node.left, file, names, deeper)
        right = node.right
        if left is None or not (isinstance(right, ast.Constant) and isinstance(right.value, str)):
            return None
        return os.path.join(left, right.value)
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    name = dotted(node.func)
    if isinstance(node.func, ast.Attribute) and node.func.attr == "resolve" and not node.args:
        return _path_of(node.func.value, file, names, deeper)
    if name in DIRNAME and len(node.args) == 1:
        inner = _path_of(node.args[0], file, names, deeper)
        return None if inner is None else os.path.dirname(inner)
    if name in SAME_PATH and len(node.args) == 1:
        return _path_of(node.args[0], file, names, deeper)
    if name in JOIN and node.args:
        first = _path_of(node.args[0], file, names, deeper)
        rest = [a.value for a in node.args[1:] if isinstance(a, ast.Constant)]
        if first is None or len(rest) != len(node.args) - 1:
            return None
        if not all(isinstance(r, str) for r in rest):
            return None
        return os.path.join(first, *rest)
    return None


def clear_cache() -> None:
    _cache.clear()


__all__ = ["added_folders", "clear_cache"]
