"""XLA409's ops in the modules of another file of the project that the training loop calls:
``loss = stft_criterion(y_hat, y)`` with ``stft_criterion = MultiResolutionSTFTLoss()`` from
losses.py, whose forward calls a module-level ``stft()`` helper that runs ``torch.stft``; or
``y_hat = generator(x)`` whose class wraps every conv in ``weight_norm`` in its ``__init__``
(vocoders: HiFi-GAN, MelGAN, ParallelWaveGAN).

From the class the loop calls, what its forward runs is followed inside that file: the
methods it calls on ``self``, the module-level functions it calls, and the forwards and
``__init__`` of the file's classes that the ``__init__`` builds (a ``ModuleList`` of loss
modules, a stack of blocks), a few levels deep. The other file is read from disk
(``workspace_classes.class_call``), never imported or run; the finding is at the call.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ...semantic.calls import class_methods
from ...semantic.loop_frames import loop_nodes
from ...semantic.model import ScriptModel
from ...semantic.workspace_classes import class_call
from .fallback_ops import FallbackOp, fallback_module
from .helper_reads import sibling_model

# (the sibling's model, a node) -> the op it runs on the device, or None
OpTest = Callable[[ScriptModel, ast.AST], "FallbackOp | None"]
MAX_FUNCTIONS = 40


@dataclass(frozen=True)
class SiblingFallbacks:
    call: ast.Call  # ``criterion(y_hat, y)`` in the training loop
    class_name: str
    path: Path
    ops: tuple[tuple[int, FallbackOp], ...]  # (1-based line in ``path``, op), source order


def sibling_fallbacks(model: ScriptModel, op: OpTest) -> Iterator[SiblingFallbacks]:
    seen: set[tuple[str, str]] = set()
    for _loop, node in loop_nodes(model):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue  # ``criterion(...)``: calling a module instance runs its forward
        try:
            target = class_call(model, node)
        except ValueError:  # ``from . import x`` in a package module (see helper_reads)
            continue
        if target is None or target.method.name not in {"forward", "__call__"}:
            continue
        owner = target.owner
        key = (str(owner.path), owner.name)
        if str(owner.path) == str(model.path) or key in seen:
            continue
        seen.add(key)
        other = sibling_model(owner.module)
        found = _ops(other, owner.node, target.method, op)
        if found:
            yield SiblingFallbacks(node, owner.name, owner.path, found)


def _ops(
    other: ScriptModel, cls: ast.ClassDef, forward: ast.AST, op: OpTest
) -> tuple[tuple[int, FallbackOp], ...]:
    functions = {
        n.name: n for n in other.tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    classes = {n.name: n for n in other.tree.body if isinstance(n, ast.ClassDef)}
    todo: list[tuple[ast.AST, ast.ClassDef | None]] = [(forward, cls)]
    init = class_methods(cls).get("__init__")
    if init is not None:
        todo.append((init, cls))
    done: set[int] = set()
    found: dict[int, tuple[int, FallbackOp]] = {}
    while todo and len(done) < MAX_FUNCTIONS:
        fn, owner = todo.pop()
        if id(fn) in done:
            continue
        done.add(id(fn))
        methods = class_methods(owner) if owner is not None else {}
        for node in other.walk_scope(fn):
            what = op(other, node) or fallback_module(other, node)
            if what is not None:
                found.setdefault(id(node), (node.lineno, what))  # type: ignore[attr-defined]
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
                and func.attr in methods
            ):
                todo.append((methods[func.attr], owner))
            elif isinstance(func, ast.Name) and func.id in functions:
                todo.append((functions[func.id], None))
            elif isinstance(func, ast.Name) and func.id in classes:
                built = class_methods(classes[func.id])
                for name in ("forward", "__init__"):
                    if name in built:
                        todo.append((built[name], classes[func.id]))
    return tuple(sorted(found.values(), key=lambda pair: pair[0]))
