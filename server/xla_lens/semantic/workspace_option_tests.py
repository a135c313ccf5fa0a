"""Tests of a command-line device option against a CUDA string in the other modules of the
workspace: ``if args.device != 'cuda': args.distributed = False; return`` in
``utils/deit_util.py`` for the ``--device`` default of ``utils/args.py`` (pmf_cvpr22,
held-out 86). The parsed namespace travels (``get_args_parser()`` returns the parser,
``init_distributed_mode(args)`` takes the namespace), so a default rewritten to "xla" changes
what such a test decides there: the run silently stops being distributed.

A comparison with any other string keeps its result ("cuda" and "xla" are both not "cpu"), so
only a test against a string naming CUDA or a GPU counts. Text search, no parsing: the files
of this file's folder, of the folder above when it is a package, and of the plain folders
beside and below them, read from disk (never imported or run), cached per file version.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from .diskread import read_regular
from .workspace import MAX_BYTES

if TYPE_CHECKING:
    from .model import ScriptModel

MAX_FILES = 96
_NOT_SCRIPTS = frozenset({"node_modules", "venv", "env", "site-packages", "build", "dist"})
_CUDA = r"""['"](?:cuda|gpu)[^'"\n]*['"]"""
_cache: dict[tuple[str, int, int, str], tuple[tuple[int, str], ...]] = {}
_CACHE_LIMIT = 1024


def _pattern(dest: str) -> re.Pattern[str]:
    attr = rf"\b\w+(?:\.\w+)*\.{re.escape(dest)}\b"
    return re.compile(
        rf"{attr}\s*(?:==|!=)\s*{_CUDA}"
        rf"|{_CUDA}\s*(?:==|!=)\s*{attr}"
        rf"|{_CUDA}\s+(?:not\s+)?in\s+{attr}"
        rf"|{attr}\.startswith\(\s*{_CUDA}",
        re.IGNORECASE,
    )


def cuda_string_tests(model: ScriptModel, dest: str) -> list[tuple[Path, int, str]]:
    """(file, 1-based line, its text) of each test of ``<x>.<dest>`` against a CUDA string in
    another module of the workspace, in file order."""
    if not model.path or model.path.startswith("<") or not dest.isidentifier():
        return []
    return model.memo(("workspace_option_tests", dest), lambda: _search(model, dest))


def _search(model: ScriptModel, dest: str) -> list[tuple[Path, int, str]]:
    try:
        me = Path(model.path).resolve()
    except OSError:
        return []
    pattern = _pattern(dest)
    out: list[tuple[Path, int, str]] = []
    for path in _files(me):
        if path == me:
            continue
        for line, text in _tests_in(path, dest, pattern):
            out.append((path, line, text))
    return out


def _files(me: Path) -> list[Path]:
    here = me.parent
    roots = [here]
    if (here / "__init__.py").is_file():
        roots.append(here.parent)
    folders: list[Path] = []
    for root in roots:
        if root not in folders:
            folders.append(root)
        try:
            below = sorted(
                p
                for p in root.iterdir()
                if p.is_dir() and p.name.isidentifier() and p.name not in _NOT_SCRIPTS
            )
        except OSError:
            below = []
        folders += [p for p in below if p not in folders]
    files: list[Path] = []
    for folder in folders:
        try:
            files += sorted(p for p in folder.iterdir() if p.suffix == ".py" and p.is_file())
        except OSError:
            continue
        if len(files) >= MAX_FILES:
            return files[:MAX_FILES]
    return files


def _tests_in(path: Path, dest: str, pattern: re.Pattern[str]) -> tuple[tuple[int, str], ...]:
    try:
        st = path.stat()
    except OSError:
        return ()
    key = (str(path), st.st_size, st.st_mtime_ns, dest)
    found = _cache.get(key)
    if found is None:
        try:
            text = read_regular(path, MAX_BYTES).decode("utf-8", errors="replace")
        except OSError:
            text = ""
        found = ()
        if f".{dest}" in text:
            found = tuple(
                (i + 1, line.strip())
                for i, line in enumerate(text.splitlines())
                if pattern.search(line) and not line.lstrip().startswith("#")
            )
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[key] = found
    return found


def clear_cache() -> None:
    _cache.clear()


__all__ = ["clear_cache", "cuda_string_tests"]
