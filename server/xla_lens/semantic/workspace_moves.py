"""Moves of a module that happen in another file of the workspace, seen from the caller.

``SimCLR(model=model, optimizer=optimizer, args=args)`` where simclr.py's ``__init__`` runs
``kwargs['model'].to(self.args.device)`` (held-out 34), or ``train(model, optimizer, loader,
device)`` of engine.py running ``model.to(device)``: the caller built its optimizer from
``model.parameters()`` first, and on XLA the move replaces those Parameters. The function or
class is found through the script's imports (``workspace_calls``, ``workspace_classes``: read
from disk, never run); the parameters it moves are read from its own text: a parameter moved itself
(``model.to(d)``, ``model.cuda()``), through ``self.<attr> = model``, or a ``**kwargs`` entry
(``kwargs['model'].to(d)``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .node_helpers import dotted
from .optimizer_events import is_device_move
from .workspace_calls import helper_target, parsed_module
from .workspace_classes import call_root, class_call, class_roots

if TYPE_CHECKING:
    from .model import ScriptModel


@dataclass(frozen=True)
class ForeignMove:
    call: ast.Call  # the script's call that runs the move
    moved: ast.expr  # the script's expression handed over and moved there
    where: str  # "simclr.py:19", for the message


def moved_parameters(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
) -> tuple[dict[str, int], dict[str, int]]:
    """The parameters ``fn`` moves to a device, and the ``**kwargs`` keys it moves, each with
    the line of its first move."""
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    kwargs = fn.args.kwarg.arg if fn.args.kwarg else None
    held: dict[str, str] = {}  # ``self.model = model``: the attribute holds the parameter
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Name):
            target = dotted(n.targets[0]) or ""
            if target.startswith("self.") and n.value.id in params:
                held[target] = n.value.id
    names: dict[str, int] = {}
    keys: dict[str, int] = {}
    for n in ast.walk(fn):
        if not (isinstance(n, ast.Call) and is_device_move(n)):
            continue
        recv = n.func.value  # type: ignore[attr-defined]
        path = dotted(recv)
        if path in params:
            names.setdefault(path, n.lineno)  # type: ignore[arg-type]
        elif path in held:
            names.setdefault(held[path], n.lineno)  # type: ignore[index]
        elif (
            kwargs is not None
            and isinstance(recv, ast.Subscript)
            and isinstance(recv.value, ast.Name)
            and recv.value.id == kwargs
            and isinstance(recv.slice, ast.Constant)
            and isinstance(recv.slice.value, str)
        ):
            keys.setdefault(recv.slice.value, n.lineno)
    return names, keys


def _handed(
    call: ast.Call, fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str, skip: int
) -> ast.expr | None:
    """The argument of ``call`` bound to ``fn``'s parameter ``name`` (the first ``skip``
    parameters, ``self``, are not the call's)."""
    positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][skip:]
    if name in positional:
        index = positional.index(name)
        if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args):
            return call.args[index]
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def _moves_of(
    call: ast.Call, fn: ast.FunctionDef | ast.AsyncFunctionDef, skip: int, path: Path
) -> Iterator[ForeignMove]:
    names, keys = moved_parameters(fn)
    handed = [(_handed(call, fn, n, skip), line) for n, line in names.items()]
    handed += [
        (next((k.value for k in call.keywords if k.arg == key), None), line)
        for key, line in keys.items()
    ]
    for arg, line in handed:
        if arg is not None and dotted(arg):
            yield ForeignMove(call, arg, f"{path.name}:{line}")


def foreign_moves(model: ScriptModel) -> list[ForeignMove]:
    """The script's calls of workspace functions, and constructor calls of workspace classes,
    of other files that move a module the call hands over (``train(model, opt, device)`` of
    engine.py running ``model.to(device)``; ``SimCLR(model=model)``)."""

    def build() -> list[ForeignMove]:
        if not model.path or model.path.startswith("<"):
            return []
        roots = class_roots(model)
        script = Path(model.path)
        out: list[ForeignMove] = []
        for call in model.calls:
            helper = helper_target(model, call)
            if helper is not None:
                parsed = parsed_module(helper.path)
                fn = parsed.functions.get(helper.function) if parsed is not None else None
                if fn is not None and helper.path != script:
                    out.extend(_moves_of(call, fn, 0, helper.path))
                continue
            if not roots or call_root(call.func) not in roots:
                continue
            found = class_call(model, call)
            if found is None or found.method.name != "__init__" or found.owner.path == script:
                continue
            out.extend(_moves_of(call, found.method, 1, found.owner.path))  # type: ignore[arg-type]
        return out

    return model.memo(("workspace_moves",), build)
