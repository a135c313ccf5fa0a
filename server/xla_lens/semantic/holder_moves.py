"""Moves of a module made by a method of the object that holds it, seen from the caller.

ssl_methods (held-out 135): ``optimizer = SGD(model.parameters())``, then ``trainer =
Trainer(cfg, model, ema_model, optimizer)`` whose ``__init__`` keeps ``self.model = model``,
then ``trainer._set_device(device)``, a method running ``self.model = self.model.to(device)``.
On XLA that move makes new Parameter objects, and the optimizer keeps the CPU ones: the model
never trains. The holder's class is the script's own or another workspace module's (read,
never imported); the receiver's constructor is the one binding that reaches the method call.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .calls import FunctionNode, class_methods, classes
from .node_helpers import dotted
from .optimizer_events import is_device_move
from .workspace_moves import ForeignMove, _handed

if TYPE_CHECKING:
    from .model import ScriptModel

MAX_BASES = 4
CONSTRUCTOR = "__init__"


def holder_moves(model: ScriptModel) -> list[ForeignMove]:
    """``h.m(...)`` where ``h = C(..., model, ...)`` keeps ``model`` on ``self.<attr>`` and
    ``C.m`` moves ``self.<attr>`` to a device: a move of the script's ``model``."""
    return model.memo(("holder_moves",), lambda: list(_find(model)))


def _find(model: ScriptModel) -> Iterator[ForeignMove]:
    from .workspace_classes import call_root, class_roots  # noqa: PLC0415 (imports the model)

    own = classes(model)
    roots = class_roots(model)
    # Only a name some assignment binds to a class's instance can hold a model this way:
    # asked once per name, before any walk back to the binding (a big script calls methods
    # on thousands of names).
    holders: dict[str, bool] = {}

    def may_hold(name: str) -> bool:
        if name not in holders:
            holders[name] = any(
                isinstance(v, ast.Call)
                and (
                    (isinstance(v.func, ast.Name) and v.func.id in own)
                    or (bool(roots) and call_root(v.func) in roots)
                )
                for v in model.assigned_from(name)
            )
        return holders[name]

    for call in model.calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            continue
        if func.attr == CONSTRUCTOR or func.value.id in ("self", "cls"):
            continue
        if not may_hold(func.value.id):
            continue
        ctor = _constructor(model, func.value)
        if ctor is None:
            continue
        found = _methods(model, ctor, func.attr)
        if found is None:
            continue
        inits, method, path = found
        init = inits[0]
        stored = _stored(inits)
        for attr, line in _moved_attributes(method).items():
            param = stored.get(attr)
            handed = _handed(ctor, init, param, 1) if param is not None else None
            if handed is not None and dotted(handed) is not None:
                yield ForeignMove(call, handed, f"{path.name}:{line}")


def _constructor(model: ScriptModel, name: ast.Name) -> ast.Call | None:
    from .reaching import binds_whole, bound_value, walk_back  # noqa: PLC0415 (imports us)

    found = walk_back(model, name, name.id, lambda s: binds_whole(s, name.id))
    if found is None or found[0] is None or found[1]:
        return None
    value = bound_value(found[0], name.id)
    return value if isinstance(value, ast.Call) else None


def _methods(
    model: ScriptModel, ctor: ast.Call, name: str
) -> tuple[list[FunctionNode], FunctionNode, Path] | None:
    """The ``__init__`` methods of the class ``ctor`` builds and of its bases, the one that
    runs first; method ``name`` (inherited where the class does not define it), and its file."""
    own = classes(model)
    if isinstance(ctor.func, ast.Name) and ctor.func.id in own:
        chain = _script_chain(own, own[ctor.func.id])
        inits = [m[CONSTRUCTOR] for m in chain if CONSTRUCTOR in m]
        method = next((m[name] for m in chain if name in m), None)
        if not inits or method is None:
            return None
        return inits, method, Path(model.path or "<script>")
    from .workspace_classes import class_call, find_method  # noqa: PLC0415 (imports the model)

    built = class_call(model, ctor)
    if built is None or built.method.name != CONSTRUCTOR or built.alternatives:
        return None
    target = find_method(built.chain, name)
    if target is None:
        return None
    inits = [
        s
        for c in built.chain
        for s in c.node.body
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == CONSTRUCTOR
    ]
    if not inits or inits[0] is not built.method:
        return None
    return inits, target[1], target[0].path


def _script_chain(own: dict[str, ast.ClassDef], cls: ast.ClassDef) -> list[dict[str, FunctionNode]]:
    out = [class_methods(cls)]
    for _ in range(MAX_BASES):
        bases = [b.id for b in cls.bases if isinstance(b, ast.Name) and b.id in own]
        if len(bases) != 1:
            break
        cls = own[bases[0]]
        out.append(class_methods(cls))
    return out


def _stored(inits: list[FunctionNode]) -> dict[str, str]:
    """``self.<attr> = <parameter>`` in the first ``__init__``, or in a base's that its
    ``super().__init__(...)`` hands the parameter to: attribute -> parameter."""
    init = inits[0]
    params = {a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)}
    out: dict[str, str] = {}
    if len(inits) > 1:
        for n in ast.walk(init):
            if _calls_base_init(n):
                for attr, param in _stored(inits[1:]).items():
                    handed = _handed(n, inits[1], param, 1)  # type: ignore[arg-type]
                    if isinstance(handed, ast.Name) and handed.id in params:
                        out[attr] = handed.id
    for n in ast.walk(init):
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1):
            continue
        pairs = [(n.targets[0], n.value)]
        if isinstance(n.targets[0], ast.Tuple) and isinstance(n.value, ast.Tuple):
            if len(n.targets[0].elts) == len(n.value.elts):
                pairs = list(zip(n.targets[0].elts, n.value.elts, strict=True))
        for target, value in pairs:
            attr = _self_attribute(target)
            if attr is not None and isinstance(value, ast.Name) and value.id in params:
                out[attr] = value.id
    return out


def _calls_base_init(node: ast.AST) -> bool:
    """``super().__init__(...)`` (or ``super(Cls, self).__init__(...)``)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == CONSTRUCTOR
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "super"
    )


def _moved_attributes(method: FunctionNode) -> dict[str, int]:
    """``self.<attr>.to(device)`` / ``self.<attr>.cuda()`` in ``method``: attr -> first line."""
    out: dict[str, int] = {}
    for n in ast.walk(method):
        if isinstance(n, ast.Call) and is_device_move(n):
            attr = _self_attribute(n.func.value)  # type: ignore[attr-defined]
            if attr is not None:
                out.setdefault(attr, n.lineno)
    return out


def _self_attribute(node: ast.AST) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None
