"""Where ``backend=args.dist_backend`` gets its value when the script sets the attribute itself.

``args.dist_backend = "nccl"`` written a line above ``init_process_group`` (MAE's
``init_distributed_mode``) decides the backend whatever the argparse default or the caller
says; ``literal_sources`` follows only defaults and container literals, so without this the
backend was "out of reach", and once another fix imported torch_xla the finding vanished
while the script still asked for NCCL. Two answers:

- ``assigned_before``: the value of the ``holder.attr = value`` statement that the read
  provably sees (same function, straight-line code, nothing in between that could rebind the
  holder or set the attribute).
- ``other_stores``: every other ``<x>.attr = value`` in the file, which a read may also see
  (set in a helper called before the read).
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel

# Calls between the store and the read that cannot reach the holder unless it is handed to
# them bare (logging the rank before the group is built is the common case).
_HARMLESS_CALLS = {"print", "str", "int", "float", "len", "repr", "format", "bool"}
_HARMLESS_METHODS = {"format", "info", "debug", "warning", "join"}
_BODY_FIELDS = ("body", "orelse", "finalbody")


def _is_store_of(node: ast.AST, holder: str, attr: str) -> bool:
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Attribute)
        and node.targets[0].attr == attr
        and isinstance(node.targets[0].value, ast.Name)
        and node.targets[0].value.id == holder
    )


def _interferes(root: ast.AST, holder: str, attr: str, consumers: frozenset = frozenset()) -> bool:
    """``root`` (code run between the store and the read) may change ``holder.attr``.
    ``consumers``: the calls the read is an argument of (they run after it)."""
    for n in ast.walk(root):
        if n in consumers:
            continue
        if isinstance(n, ast.Name) and n.id == holder and not isinstance(n.ctx, ast.Load):
            return True
        if isinstance(n, ast.Attribute) and n.attr == attr and not isinstance(n.ctx, ast.Load):
            return True
        if isinstance(n, ast.Call):
            passed = [*n.args, *(k.value for k in n.keywords)]
            if any(isinstance(a, ast.Name | ast.Starred) and _names(a, holder) for a in passed):
                return True
            func = n.func
            if isinstance(func, ast.Attribute):
                if isinstance(func.value, ast.Name) and func.value.id == holder:
                    return True  # a method of the holder may set the attribute
                if func.attr not in _HARMLESS_METHODS:
                    return True
            elif not (isinstance(func, ast.Name) and func.id in _HARMLESS_CALLS):
                # Any other call may reach the holder through an alias (self.args = args).
                return True
    return False


def _names(node: ast.expr, holder: str) -> bool:
    inner = node.value if isinstance(node, ast.Starred) else node
    return isinstance(inner, ast.Name) and inner.id == holder


def _siblings(parent: ast.AST, stmt: ast.stmt) -> list[ast.stmt] | None:
    for name in _BODY_FIELDS:
        body = getattr(parent, name, None)
        if isinstance(body, list) and stmt in body:
            return body
    return None


def assigned_before(model: ScriptModel, read: ast.Attribute) -> ast.Assign | None:
    """The ``holder.attr = value`` statement whose value ``read`` surely sees, or None."""
    if not isinstance(read.value, ast.Name):
        return None
    holder, attr = read.value.id, read.attr
    stmt = model.enclosing_statement(read)
    if stmt is None:
        return None
    # The read's own statement: another argument of the call (``rank=setup(args)``) may run
    # first; the calls the read is handed to run after it.
    consumers = frozenset(a for a in model.ancestors(read) if isinstance(a, ast.Call))
    if _interferes(stmt, holder, attr, consumers):
        return None
    while True:
        parent = model.parent(stmt)
        if parent is None:
            return None
        body = _siblings(parent, stmt)
        if body is None:
            return None
        for sib in reversed(body[: body.index(stmt)]):
            if _is_store_of(sib, holder, attr):
                return sib  # type: ignore[return-value]
            if _interferes(sib, holder, attr):
                return None
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
            return None
        if isinstance(parent, ast.If):
            if _interferes(parent.test, holder, attr):
                return None
        elif isinstance(parent, ast.With | ast.AsyncWith):
            if any(_interferes(item, holder, attr) for item in parent.items):
                return None
        elif not (isinstance(parent, ast.Try) and stmt in parent.body):
            # A loop (an earlier iteration may set it later), a match, or a try's else/
            # finally/handler (its body ran between, maybe only in part).
            return None
        stmt = parent


def other_stores(model: ScriptModel, attr: str) -> list[ast.Assign]:
    """Every ``<name>.attr = value`` in the file (a helper that sets the attribute)."""
    return [
        n
        for n in model.nodes_of(ast.Assign)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Attribute)
        and n.targets[0].attr == attr
    ]


def stores_any_other_way(model: ScriptModel, attr: str) -> bool:
    """``attr`` also set by augmented/annotated assignment, unpacking, setattr or del: the
    values a read may see are then out of reach."""
    for n in model.nodes_of(ast.Attribute):
        if not (isinstance(n, ast.Attribute) and n.attr == attr) or isinstance(n.ctx, ast.Load):
            continue
        parent = model.parent(n)
        if not (isinstance(parent, ast.Assign) and parent.targets == [n]):
            return True
    return any(
        isinstance(c, ast.Call)
        and isinstance(c.func, ast.Name)
        and c.func.id == "setattr"
        and len(c.args) > 1
        and isinstance(c.args[1], ast.Constant)
        and c.args[1].value == attr
        for c in model.calls
    )
