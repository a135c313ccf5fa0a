"""Whether an optimizer a function builds outlives the call: returned, yielded, stored on an
attribute, in a container or a global, or handed to a call whose result does any of that
(``scheduler = MultiStepLR(optimizer)`` then ``return scheduler``). One that is built, stepped
and dropped inside the function cannot be made stale by a move its caller makes afterwards.
Anything this module cannot follow counts as outliving the call.
"""

from __future__ import annotations

import ast

MAX_ALIASES = 4  # names followed from the optimizer (``scheduler`` built over it, ...)


def outlives_its_function(build: ast.AST, scope: ast.AST) -> bool:
    """``build``: the optimizer's constructor call; ``scope``: the function it is built in."""
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return True  # the module or a class body: it stays
    parents = {id(c): p for p in ast.walk(scope) for c in ast.iter_child_nodes(p)}
    stmt = _statement(build, parents)
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.value is build
    ):
        return True  # ``self.opt = SGD(...)``, ``return SGD(...)``, ``f(SGD(...))``
    declared = {
        n for s in ast.walk(scope) if isinstance(s, ast.Global | ast.Nonlocal) for n in s.names
    }
    names = [stmt.targets[0].id]
    seen: set[str] = set()
    while names:
        name = names.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in declared or len(seen) > MAX_ALIASES:
            return True
        for node in ast.walk(scope):
            if not (
                isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
            ):
                continue
            use = _statement(node, parents)
            if use is None or _hands_out(use):
                return True
            if isinstance(use, ast.Assign) and _in(node, use.value):
                if not all(isinstance(t, ast.Name) for t in use.targets):
                    return True  # ``self.opt = opt``, ``opts[k] = opt``
                names.extend(t.id for t in use.targets if isinstance(t, ast.Name))
            elif isinstance(use, ast.AugAssign | ast.AnnAssign) and _in(node, use.value):
                return True
            elif _handed_to_a_keeper(node, parents):
                return True  # ``opts.append(opt)``, ``trainer.set_optimizer(opt)``
    return False


# Calls that take the optimizer for the moment of the call and keep nothing of it.
MOMENTARY = frozenset({"step", "unscale_", "optimizer_step", "reduce_gradients", "update"})


def _handed_to_a_keeper(node: ast.Name, parents: dict[int, ast.AST]) -> bool:
    """``node`` is an argument of a call that may keep it (not ``scaler.step(opt)``)."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.keyword):
        parent = parents.get(id(parent))
    if not isinstance(parent, ast.Call) or parent.func is node:
        return False
    func = parent.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name not in MOMENTARY


def _hands_out(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Return):
        return True
    return any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(stmt))


def _in(node: ast.AST, root: ast.AST | None) -> bool:
    return root is not None and any(n is node for n in ast.walk(root))


def _statement(node: ast.AST, parents: dict[int, ast.AST]) -> ast.stmt | None:
    cur: ast.AST | None = node
    while cur is not None and not isinstance(cur, ast.stmt):
        cur = parents.get(id(cur))
    return cur
