"""XLA109: a module class that builds its own optimizer in ``__init__`` from
``self.parameters()`` (minimalRL's ``PPO(nn.Module)``: ``self.optimizer = optim.Adam(
self.parameters(), lr=...)``), and an instance moved to the device after it is built
(``model = PPO().to(device)``, or ``model = PPO()`` then ``model.to(device)``). On XLA the move
makes new Parameter objects, so the optimizer built in the constructor keeps the old CPU ones:
``step()`` changes nothing the model uses and the loss stays flat (measured on torch_xla 2.9:
the weights after three steps equal the initial ones). The move cannot go before the
constructor, so there is no automatic fix: move in ``__init__`` before the optimizer, or build
the optimizer after the move.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ...semantic.calls import class_methods, classes
from ...semantic.constructor_optimizers import (
    ConstructorOptimizer,
    constructor_optimizer,
    init_optimizer,
)
from ...semantic.model import ScriptModel, method_name, receiver
from ...semantic.optimizer_events import (
    OPTIMIZER_MODULES,
    OPTIMIZER_NAMES,
    PARAMETER_METHODS,
    moves_to_a_device,
)


@dataclass(frozen=True)
class SelfOptimizer:
    build: ast.Call  # the optimizer built in ``__init__``
    cls: ast.ClassDef
    move: ast.Call  # the move of an instance, outside the class


def init_builds(model: ScriptModel) -> dict[str, ast.Call]:
    """Module classes of the script whose ``__init__`` builds an optimizer from
    ``self.parameters()``: class name -> that call."""
    return {name: b for name, cls in classes(model).items() if (b := _init_build(model, cls))}


def self_optimizers(model: ScriptModel) -> Iterator[SelfOptimizer]:
    builds = init_builds(model)
    if not builds:
        return
    for call in model.calls:
        if not moves_to_a_device(model, call):
            continue
        cls_name = _instance_class(model, receiver(call))
        if cls_name in builds:
            yield SelfOptimizer(builds[cls_name], classes(model)[cls_name], call)


def _init_build(model: ScriptModel, cls: ast.ClassDef) -> ast.Call | None:
    # ``self.parameters()`` or a submodule's (``self.net.parameters()``): the instance's move
    # makes new Parameters for both.
    found = init_optimizer(model, cls)
    return found[0] if found is not None else None


def _instance_class(model: ScriptModel, node: ast.AST | None) -> str | None:
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


def workspace_self_optimizers(
    model: ScriptModel,
) -> Iterator[tuple[ConstructorOptimizer, ast.Call]]:
    """The same for a class of another module of the workspace (MAML-Pytorch's ``Meta`` in
    meta.py, moved by ``Meta(args, config).to(device)`` in the script, held-out 74)."""
    for call in model.calls:
        if not moves_to_a_device(model, call):
            continue
        found = constructor_optimizer(model, call)
        if found is not None and found.path is not None:
            yield found, call


@dataclass(frozen=True)
class SelfMove:
    build: ast.Call  # an optimizer over parameters of ``self``'s submodules
    move: ast.Call  # ``self.to(device)`` later in the same method
    fn: ast.FunctionDef | ast.AsyncFunctionDef


def self_moves_after_builds(model: ScriptModel) -> Iterator[SelfMove]:
    """``self.optims[net] = Adam(self.nets[net].parameters())`` and then, later in the same
    method, ``self.to(self.device)`` (stargan-v2's ``Solver.__init__``, held-out 28): the move
    replaces the parameters of every submodule of ``self`` on XLA, those the optimizers were
    built from too."""
    for cls in classes(model).values():
        for fn in class_methods(cls).values():
            moves = [
                c
                for c in ast.walk(fn)
                if isinstance(c, ast.Call)
                and isinstance(receiver(c), ast.Name)
                and receiver(c).id == "self"  # type: ignore[union-attr]
                and moves_to_a_device(model, c)
            ]
            if not moves:
                continue
            for n in ast.walk(fn):
                if isinstance(n, ast.Call) and _builds_from_self(model, n):
                    later = [
                        m for m in moves if (m.lineno, m.col_offset) > (n.lineno, n.col_offset)
                    ]
                    if later:
                        yield SelfMove(n, min(later, key=lambda m: m.lineno), fn)


def _builds_from_self(model: ScriptModel, call: ast.Call) -> bool:
    q = model.call_name(call) or ""
    if not (q.startswith(OPTIMIZER_MODULES) or q in OPTIMIZER_NAMES):
        return False
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        for c in ast.walk(arg):
            if isinstance(c, ast.Call) and method_name(c) in PARAMETER_METHODS:
                base = receiver(c)
                while isinstance(base, ast.Attribute | ast.Subscript):
                    base = base.value
                if isinstance(base, ast.Name) and base.id == "self":
                    return True
    return False
