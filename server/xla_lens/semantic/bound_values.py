"""What a name is bound to, element by element for tuple assignments: ``agent, env =
Agent(device), Env()`` binds ``agent`` to ``Agent(device)`` (held-out 22 r8: the whole
tuple hid the workspace agent whose ``learn()`` trains). The script's index
(``ScriptModel.assignments``) keeps plain-name assignments only."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import ScriptModel


def bound_values(model: ScriptModel, name: str) -> list[ast.expr]:
    """What ``name``'s assignments give it, element by element for tuples: ``agent, env =
    Agent(device), Env()`` binds ``agent`` to ``Agent(device)`` (held-out 22 r8, where the
    whole tuple hid the agent whose ``learn()`` trains)."""
    out: list[ast.expr] = []
    for a in (*model.assignments.get(name, ()), *tuple_assignments(model).get(name, ())):
        if a.value is None:
            continue
        targets = a.targets if isinstance(a, ast.Assign) else [a.target]
        for t in targets:
            value = _element_of(t, a.value, name)
            if value is not None:
                out.append(value)
            elif isinstance(t, ast.Tuple | ast.List) and any(
                isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)
            ):
                # ``a, b = make()``: no element to point at; the whole value stands for it, so
                # no caller takes the name for one known construction.
                out.append(a.value)
    return out


def tuple_assignments(model: ScriptModel) -> dict[str, list[ast.Assign]]:
    """Assignments to tuples of names, by each name (the script's index keeps plain names)."""

    def build() -> dict[str, list[ast.Assign]]:
        out: dict[str, list[ast.Assign]] = {}
        for a in model.nodes_of(ast.Assign):
            assert isinstance(a, ast.Assign)
            for t in a.targets:
                if isinstance(t, ast.Tuple | ast.List):
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            out.setdefault(n.id, []).append(a)
        return out

    return model.memo(tuple_assignments, build)


def _element_of(target: ast.AST, value: ast.expr, name: str) -> ast.expr | None:
    if isinstance(target, ast.Name):
        return value if target.id == name else None
    if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
        if len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts, strict=True):
                found = _element_of(t, v, name)
                if found is not None:
                    return found
    return None
