"""XLA402: data-dependent ops in the ``forward`` of a module class of another file of the
project that the training loop calls (held-out 24, ssd.pytorch: ``criterion = MultiBoxLoss(...)``
from layers/modules, whose forward selects ``loc_data[pos_idx]`` with a boolean mask every step),
or in a method of a class of another file that runs the training step (it steps an optimizer:
held-out 25, Rainbow's ``dqn.learn(mem)``, whose body updates ``l[(u > 0) * (l == u)] -= 1``).
The finding is at the call in the training loop: the other file's code is read from disk
(``workspace_classes.class_call``), never imported or run."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ...semantic.loop_frames import loop_nodes
from ...semantic.model import ScriptModel
from ...semantic.workspace_classes import class_call
from ...semantic.wrapped_steps import workspace_steps
from .helper_reads import sibling_model

OpTest = Callable[[ScriptModel, ast.AST], "str | None"]


@dataclass(frozen=True)
class ForwardOps:
    call: ast.Call  # ``criterion(out, targets)`` in the training loop
    class_name: str
    path: Path
    method: str
    ops: tuple[tuple[int, str], ...]  # (1-based line, what) in source order


def workspace_forward_ops(model: ScriptModel, op: OpTest) -> Iterator[ForwardOps]:
    seen: set[int] = set()
    for _loop, node in loop_nodes(model):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        by_name = isinstance(func, ast.Name)
        if not (by_name or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name))):
            continue
        try:
            target = class_call(model, node)
        except ValueError:  # ``from . import x`` in a package module (see helper_reads)
            continue
        if target is None or id(target.method) in seen:
            continue
        # A method other than forward only when it is the training step itself (it steps an
        # optimizer): an environment's or a replay buffer's methods work on host arrays.
        if target.method.name != "forward" and (by_name or not workspace_steps(model, node)):
            continue
        if str(target.owner.path) == str(model.path):
            continue
        seen.add(id(target.method))
        other = sibling_model(target.owner.module)
        found = [
            (n.lineno, what)  # type: ignore[attr-defined]
            for n in other.walk_scope(target.method)
            if (what := op(other, n)) is not None
        ]
        if found:
            yield ForwardOps(
                node, target.owner.name, target.owner.path, target.method.name, tuple(sorted(found))
            )
