"""An environment read whose value only ever lands in an attribute nothing reads.

``env_local_rank = int(os.environ.get("LOCAL_RANK", -1))`` then ``if env_local_rank != -1 and
env_local_rank != args.local_rank: args.local_rank = env_local_rank``, with ``args.local_rank``
read nowhere else (the diffusers example scripts, held-out 66's audio-diffusion): the value
decides nothing, so rewriting the read for XLA changes nothing either, and a finding there
only asks the user to review dead code.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel


def unread_copy(model: ScriptModel, read: ast.AST) -> bool:
    """``read`` (the env read, or the ``int(...)`` around it) is the whole value of a name
    assigned once, and that name is only compared in ``if`` tests and copied into
    attributes whose names are read nowhere but in those tests."""
    stmt = model.parent(read)
    if not (
        isinstance(stmt, ast.Assign)
        and stmt.value is read
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return False
    name = stmt.targets[0].id
    nodes = model.name_nodes(name)
    if sum(isinstance(n.ctx, ast.Store) for n in nodes) != 1:
        return False
    tests: list[ast.expr] = []
    copied: set[str] = set()
    for use in nodes:
        if isinstance(use.ctx, ast.Store):
            continue
        parent = model.parent(use)
        if isinstance(parent, ast.Assign) and parent.value is use:
            if not all(isinstance(t, ast.Attribute) for t in parent.targets):
                return False
            copied.update(t.attr for t in parent.targets)  # type: ignore[attr-defined]
            continue
        test = _if_test_of(model, use)
        if test is None:
            return False
        tests.append(test)
    if not copied:
        return False
    inside = {id(n) for t in tests for n in ast.walk(t)}
    return not any(
        isinstance(a, ast.Attribute)
        and a.attr in copied
        and isinstance(a.ctx, ast.Load)
        and id(a) not in inside
        for a in model.nodes_of(ast.Attribute)
    )


def _if_test_of(model: ScriptModel, node: ast.AST) -> ast.expr | None:
    """The test of the ``if`` that ``node`` is part of (through comparisons and and/or/not)."""
    child, parent = node, model.parent(node)
    while isinstance(parent, ast.Compare | ast.BoolOp | ast.UnaryOp):
        child, parent = parent, model.parent(parent)
    if isinstance(parent, ast.If) and parent.test is child:
        return child
    return None
