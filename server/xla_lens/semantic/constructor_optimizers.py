"""An optimizer a class builds in ``__init__`` from its own parameters, found from a move of
an instance: ``Meta(args, config).to(device)`` where meta.py's ``Meta.__init__`` runs
``self.meta_optim = optim.Adam(self.net.parameters(), ...)`` (MAML-Pytorch, held-out 74). On
XLA the move makes new Parameter objects, so that optimizer keeps the CPU ones and the model
never trains; pointing the move at the XLA device turns a crash into that silence. The class
may be the script's own or a workspace module's (and its workspace bases)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .calls import class_methods, classes
from .model import ScriptModel, method_name, receiver
from .optimizer_events import OPTIMIZER_MODULES, OPTIMIZER_NAMES, PARAMETER_METHODS


@dataclass(frozen=True)
class ConstructorOptimizer:
    cls: str
    path: Path | None  # the module defining the class; None for the script's own
    line: int  # 1-based, in that module
    text: str  # the parameters it is built from: ``self.net.parameters()``
    build: ast.Call


def _self_parameters(call: ast.Call) -> ast.Call | None:
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        for c in ast.walk(arg):
            if isinstance(c, ast.Call) and method_name(c) in PARAMETER_METHODS:
                base = receiver(c)
                while isinstance(base, ast.Attribute | ast.Subscript):
                    base = base.value
                if isinstance(base, ast.Name) and base.id == "self":
                    return c
    return None


def init_optimizer(model: ScriptModel, cls: ast.ClassDef) -> tuple[ast.Call, ast.Call] | None:
    """(optimizer call, parameters call) built in ``cls.__init__`` from ``self``'s
    parameters, or None. ``model`` is the module that defines ``cls``."""
    init = class_methods(cls).get("__init__")
    if init is None:
        return None
    for n in ast.walk(init):
        if not isinstance(n, ast.Call):
            continue
        q = model.call_name(n) or ""
        if q.startswith(OPTIMIZER_MODULES) or q in OPTIMIZER_NAMES:
            params = _self_parameters(n)
            if params is not None:
                return n, params
    return None


def _module_model(model: ScriptModel, path: Path, source: str, tree: ast.Module) -> ScriptModel:
    memo: dict[Path, ScriptModel] = model.memo(("constructor_optimizers", "modules"), dict)
    if path not in memo:
        memo[path] = ScriptModel(source, tree, "<sibling>")
    return memo[path]


def constructor_optimizer(model: ScriptModel, move: ast.Call) -> ConstructorOptimizer | None:
    """The optimizer the class of ``move``'s receiver builds in ``__init__``, if any."""
    memo: dict[int, ConstructorOptimizer | None] = model.memo(
        ("constructor_optimizers", "moves"), dict
    )
    if id(move) not in memo:
        memo[id(move)] = _find(model, move)
    return memo[id(move)]


def _find(model: ScriptModel, move: ast.Call) -> ConstructorOptimizer | None:
    from . import workspace_classes as wc  # noqa: PLC0415 (the workspace layer imports the model)

    recv = receiver(move)
    own = classes(model)
    name = _own_class(model, recv)
    if name in own:
        found = init_optimizer(model, own[name])
        if found is not None:
            return ConstructorOptimizer(
                name, None, found[0].lineno, model.segment(found[1]), found[0]
            )
    if isinstance(recv, ast.Call):
        refs = wc.built(model, recv)
    elif isinstance(recv, ast.Name):
        refs = wc.instance_classes(model, recv.id)
    else:
        refs = ()
    for ref in refs:
        for cls in wc.chain(ref):
            if cls.path == Path(model.path):
                continue
            other = _module_model(model, cls.path, cls.module.source, cls.module.tree)
            found = init_optimizer(other, cls.node)
            if found is not None:
                text = ast.get_source_segment(cls.module.source, found[1]) or "self.parameters()"
                return ConstructorOptimizer(cls.name, cls.path, found[0].lineno, text, found[0])
    return None


def _own_class(model: ScriptModel, node: ast.AST | None) -> str | None:
    """``PPO(...)`` itself, or a name every assignment of which is ``PPO(...)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node, ast.Name):
        values = model.assigned_from(node.id)
        names = {
            v.func.id for v in values if isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
        }
        if len(names) == 1 and len(values) == sum(
            isinstance(v, ast.Call) and isinstance(v.func, ast.Name) for v in values
        ):
            return names.pop()
    return None
