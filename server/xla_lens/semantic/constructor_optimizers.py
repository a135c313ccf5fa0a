"""An optimizer a class builds in ``__init__`` from its own parameters, found from a move of
an instance: ``Meta(args, config).to(device)`` where meta.py's ``Meta.__init__`` runs
``self.meta_optim = optim.Adam(self.net.parameters(), ...)`` (MAML-Pytorch, held-out 74). On
XLA the move makes new Parameter objects, so that optimizer keeps the CPU ones and the model
never trains; pointing the move at the XLA device turns a crash into that silence. The class
may be the script's own or a workspace module's (and its workspace bases)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .calls import FunctionNode, class_methods, classes
from .model import ScriptModel, method_name, receiver
from .optimizer_events import OPTIMIZER_MODULES, OPTIMIZER_NAMES, PARAMETER_METHODS

if TYPE_CHECKING:
    from .workspace_classes import ClassRef


@dataclass(frozen=True)
class ConstructorOptimizer:
    cls: str
    path: Path | None  # the module defining the class; None for the script's own
    line: int  # 1-based, in that module
    text: str  # the parameters it is built from: ``self.net.parameters()``
    build: ast.Call
    via: str | None = None  # the method ``__init__`` calls on ``self`` that builds it
    # The other classes the same factory call may build whose constructors build one too.
    also: tuple[str, ...] = ()

    def builder(self, where: str) -> str:
        """```Net.__init__` (meta.py line 12)``, ```Net.__init__` (through `self.compile()`,
        model.py line 88)``."""
        via = f"through `self.{self.via}()`, " if self.via else ""
        return f"`{self.cls}.__init__` ({via}{where})"

    @property
    def alternatives(self) -> str:
        """`` (so do `A` and `B`, which that call may build instead)`` or ""."""
        if not self.also:
            return ""
        names = [f"`{c}`" for c in self.also]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f" (so do {listed}, which that call may build instead)"


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
    parameters, or in a method of the class ``__init__`` calls on ``self``; None otherwise.
    ``model`` is the module that defines ``cls``."""
    init = class_methods(cls).get("__init__")
    if init is None:
        return None
    methods = class_methods(cls)
    found = _optimizer_in(
        Where(model, None), init, lambda name: (Where(model, None), methods.get(name)), CALL_DEPTH
    )
    return (found[1], found[2]) if found is not None else None


# How deep ``__init__``'s calls on ``self`` are followed (``__init__`` -> ``self.compile()``
# -> ``self._build_optimizer()``).
CALL_DEPTH = 2


@dataclass(frozen=True)
class Where:
    model: ScriptModel  # the module that defines a function
    path: Path | None  # its file; None for the script's own


Resolver = Callable[[str], tuple[Where, FunctionNode | None]]


def _optimizer_in(
    where: Where, fn: FunctionNode, resolve: Resolver, depth: int
) -> tuple[Where, ast.Call, ast.Call, str | None] | None:
    """The optimizer ``fn`` builds from ``self``'s parameters, itself or in the methods it
    calls on ``self`` (EfficientConformer's ``Model.compile``, called by each model's
    ``__init__``, held-out 116): (where it is, optimizer call, parameters call, the method
    of ``self`` that ``fn`` called to build it)."""
    called: list[str] = []
    for n in ast.walk(fn):
        if not isinstance(n, ast.Call):
            continue
        q = where.model.call_name(n) or ""
        if q.startswith(OPTIMIZER_MODULES) or q in OPTIMIZER_NAMES:
            params = _self_parameters(n)
            if params is not None:
                return where, n, params, None
        func = n.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and func.attr not in called
        ):
            called.append(func.attr)
    if depth <= 0:
        return None
    for name in called:
        owner, method = resolve(name)
        if method is not None and method is not fn:
            found = _optimizer_in(owner, method, resolve, depth - 1)
            if found is not None:
                return found[0], found[1], found[2], found[3] or name
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
        # Every binding of the name, or else the one that reaches the move (GraphSAINT's
        # ``model = GraphSAINT(...)`` then ``model = model.cuda()`` in ``prepare()``, while
        # ``train()`` binds its own ``model`` from a tuple: held-out 123).
        refs = wc.instance_classes(model, recv.id) or wc.reaching_classes(model, recv)
    else:
        refs = ()
    hits: list[ConstructorOptimizer] = []
    for ref in refs:
        hit = _workspace_build(model, ref)
        if hit is not None:
            hits.append(hit)
    if not hits:
        return None
    return replace(hits[0], also=tuple(h.cls for h in hits[1:]))


def _workspace_build(model: ScriptModel, ref: ClassRef) -> ConstructorOptimizer | None:
    from . import workspace_classes as wc  # noqa: PLC0415 (the workspace layer imports the model)

    classes_run = wc.chain(ref)

    def resolve(name: str) -> tuple[Where, FunctionNode | None]:
        hit = wc.find_method(classes_run, name)
        if hit is None:
            return Where(model, None), None
        return _defining(model, hit[0]), hit[1]

    for cls in classes_run:
        if cls.path == Path(model.path):
            continue
        init = class_methods(cls.node).get("__init__")
        if init is None:
            continue
        found = _optimizer_in(_defining(model, cls), init, resolve, CALL_DEPTH)
        if found is not None:
            where, build, params, via = found
            text = where.model.segment(params) or "self.parameters()"
            return ConstructorOptimizer(ref.name, where.path, build.lineno, text, build, via)
    return None


def _defining(model: ScriptModel, cls: ClassRef) -> Where:
    if cls.path == Path(model.path):
        return Where(model, None)
    return Where(_module_model(model, cls.path, cls.module.source, cls.module.tree), cls.path)


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
