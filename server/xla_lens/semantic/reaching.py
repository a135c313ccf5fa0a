"""Which bindings of a name can reach one read of it in a single pass of the code around it:
the last assignment that always runs before the read in its block, every binding in between,
every binding of the loops around the read (their previous pass), and, with none that always
runs, every binding before it in the frame. Flow facts for ``host_values``; a value that cannot
be judged (a ``for`` target, ``with ... as``, an import, a parameter) is ``UNKNOWN``."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from .model import SCOPE_TYPES, ScriptModel, method_name
from .tensors import scope_of

# A binding whose value cannot be judged (a ``for`` target, ``with ... as``, an import).
UNKNOWN = ast.Constant(value=None)
# Calls that store their arguments into the receiver (content of a list, dict or tensor).
STORING_METHODS = frozenset({"append", "extend", "insert", "update", "add", "setdefault"})
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Every kind of node ``_bindings_index`` records something for.
_BINDING_NODES = (
    *SCOPE_TYPES,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.NamedExpr,
    ast.For,
    ast.AsyncFor,
    ast.comprehension,
    ast.withitem,
    ast.ExceptHandler,
    ast.alias,
    ast.Global,
    ast.Nonlocal,
    ast.Call,
)


def walk_back(
    model: ScriptModel, node: ast.AST, name: str, stop: Callable[[ast.stmt], bool]
) -> tuple[ast.stmt | None, list[ast.expr]] | None:
    """From ``node``'s statement back to the first earlier statement ``stop`` accepts that
    always runs before it in this pass; with the values bound to ``name`` in between. At
    the frame's start with no such statement: (None, every binding before) for the
    module, None inside a function whose parameter (or caller) gives the value."""
    scope = scope_of(model, node)
    cur: ast.AST | None = model.enclosing_statement(node)
    between: list[ast.expr] = []
    if isinstance(cur, ast.While) and any(a is cur.test for a in (node, *model.ancestors(node))):
        between.extend(bindings(model, cur, name))  # the test runs again after each pass
    while cur is not None and cur is not scope:
        parent = model.parent(cur)
        if parent is None:
            return None
        for field, value in ast.iter_fields(parent):
            if isinstance(value, list) and any(s is cur for s in value):
                index = next(i for i, s in enumerate(value) if s is cur)
                for sibling in reversed(value[:index]):
                    if stop(sibling):
                        between.extend(bindings(model, sibling, name, skip_top=True))
                        return sibling, between
                    inside = _last_in_with(model, sibling, name, stop)
                    if inside is not None:
                        between.extend(inside[1])
                        return inside[0], between
                    between.extend(bindings(model, sibling, name))
            elif field not in ("decorator_list", "returns"):
                for part in value if isinstance(value, list) else [value]:
                    if isinstance(part, ast.AST):
                        between.extend(bindings(model, part, name))
        if isinstance(parent, ast.For | ast.While | ast.AsyncFor) and parent is not scope:
            between.extend(bindings(model, parent, name))  # the previous pass's
        cur = parent
    if isinstance(scope, ast.Module):
        return None, between
    return None


def _last_in_with(
    model: ScriptModel, stmt: ast.stmt, name: str, stop: Callable[[ast.stmt], bool]
) -> tuple[ast.stmt, list[ast.expr]] | None:
    """The last statement ``stop`` accepts at the top of a ``with`` block's body (which always
    runs to its end when code after the block runs, unless the block can swallow an
    exception), with the values bound to ``name`` after it and by the ``with`` itself."""
    if not isinstance(stmt, ast.With | ast.AsyncWith):
        return None
    if any("suppress" in (model.segment(i.context_expr) or "") for i in stmt.items):
        return None
    between: list[ast.expr] = []
    for item in stmt.items:
        between.extend(bindings(model, item, name))
    for inner in reversed(stmt.body):
        if stop(inner):
            between.extend(bindings(model, inner, name, skip_top=True))
            return inner, between
        found = _last_in_with(model, inner, name, stop)
        if found is not None:
            return found[0], between + found[1]
        between.extend(bindings(model, inner, name))
    return None


def arguments(call: ast.Call) -> Iterator[ast.expr]:
    for a in call.args:
        yield a.value if isinstance(a, ast.Starred) else a
    for k in call.keywords:
        yield k.value


def bound_by_comprehension(model: ScriptModel, name: ast.Name) -> bool:
    for a in model.ancestors(name):
        if isinstance(a, ast.stmt):
            return False
        if isinstance(a, COMPREHENSIONS) and any(
            name.id in {n.id for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            for g in a.generators
        ):
            return True
    return False


def binds_whole(stmt: ast.stmt, name: str) -> bool:
    """``stmt`` always rebinds ``name`` itself (not an element or attribute of it)."""
    if isinstance(stmt, ast.Assign):
        return any(name in _whole_names(t) for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return (
            stmt.value is not None
            and isinstance(stmt.target, ast.Name)
            and (stmt.target.id == name)
        )
    return False


def _whole_names(target: ast.AST) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Tuple | ast.List):
        return {n for t in target.elts for n in _whole_names(t)}
    if isinstance(target, ast.Starred):
        return _whole_names(target.value)
    return set()


def bound_value(stmt: ast.stmt, name: str) -> ast.expr:
    """The value ``stmt`` binds to ``name`` (an unpacked element where it can be matched)."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]
    value = stmt.value  # type: ignore[attr-defined]
    for t in targets:
        found = _element(t, value, name)
        if found is not None:
            return found
    return UNKNOWN


def _element(target: ast.AST, value: ast.expr, name: str) -> ast.expr | None:
    if isinstance(target, ast.Name):
        return value if target.id == name else None
    if isinstance(target, ast.Tuple | ast.List):
        if not (isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts)):
            return UNKNOWN if name in _whole_names(target) else None
        for t, v in zip(target.elts, value.elts, strict=True):
            found = _element(t, v, name)
            if found is not None:
                return found
    return None


def _base_name(target: ast.AST) -> str | None:
    while isinstance(target, ast.Subscript | ast.Attribute):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _bindings_index(model: ScriptModel, scope: ast.AST) -> dict[str, list[tuple]]:
    """Per name, what the frame binds to it or stores into it, once per frame: ``(node,
    value, whole)``, ``whole`` when ``node`` rebinds the name itself."""

    def build() -> dict[str, list[tuple]]:
        index: dict[str, list[tuple]] = {}

        def add(name: str, node: ast.AST, value: ast.expr, whole: bool) -> None:
            index.setdefault(name, []).append((node, value, whole))

        for n in model.walk_scope(scope):
            if not isinstance(n, _BINDING_NODES):
                continue  # most nodes: one check instead of one per kind below
            if isinstance(n, SCOPE_TYPES):
                if not isinstance(n, ast.Lambda):
                    add(n.name, n, UNKNOWN, True)
            elif isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign):
                if n.value is None:
                    continue
                for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                    for name in _whole_names(t):
                        found = _element(t, n.value, name)
                        add(name, n, UNKNOWN if found is None else found, True)
                    for part in t.elts if isinstance(t, ast.Tuple | ast.List) else [t]:
                        base = _base_name(part)
                        if base is not None and not isinstance(part, ast.Name):
                            add(base, n, n.value, False)  # stored into it
            elif isinstance(n, ast.NamedExpr):
                add(n.target.id, n, n.value, True)
            elif isinstance(n, ast.For | ast.AsyncFor | ast.comprehension):
                for name in _whole_names(n.target):
                    add(name, n, UNKNOWN, True)
            elif isinstance(
                n, ast.withitem | ast.ExceptHandler | ast.alias | ast.Global | ast.Nonlocal
            ):
                for name in _names_bound_by(n):
                    add(name, n, UNKNOWN, True)
            elif isinstance(n, ast.Call):
                method = method_name(n) or ""
                if not (method in STORING_METHODS or (method.endswith("_") and method[:1] != "_")):
                    continue
                base = _base_name(n.func)
                if base is not None:
                    for a in arguments(n):
                        add(base, n, a, False)
        return index

    return model.memo((_bindings_index, scope), build)


def whole_bindings(model: ScriptModel, scope: ast.AST, name: str) -> list[tuple[ast.AST, ast.expr]]:
    """Every ``(node, value)`` that rebinds ``name`` itself in ``scope`` (``UNKNOWN`` where
    the value cannot be judged: a ``for`` target, an import)."""
    return [
        (node, value) for node, value, whole in _bindings_index(model, scope).get(name, ()) if whole
    ]


def binding_entries(model: ScriptModel, scope: ast.AST, name: str) -> list[tuple]:
    """Every ``(node, value, whole)`` of ``scope``'s frame for ``name``: what binds it or
    stores into it (``whole`` when the node rebinds the name itself)."""
    return list(_bindings_index(model, scope).get(name, ()))


def scope_bindings(model: ScriptModel, scope: ast.AST, name: str) -> list:
    """Every value ``scope``'s frame binds to ``name`` or stores into it (``bindings`` of each
    statement of its body, together)."""
    return [value for _node, value, _whole in _bindings_index(model, scope).get(name, ())]


def bindings(model: ScriptModel, root: ast.AST, name: str, skip_top: bool = False) -> list:
    """Values ``root`` binds to ``name`` or stores into it (``name[k] = v``,
    ``name.append(v)``, ``name.add_(v)``), ``UNKNOWN`` where the value cannot be judged.
    ``skip_top``: leave out the binding ``root`` itself makes (the dominating one)."""
    entries = _bindings_index(model, scope_of(model, root)).get(name, ())
    out = []
    for node, value, whole in entries:
        if node is root:
            if not (skip_top and whole):
                out.append(value)
        elif root in _ancestors(model, node):
            out.append(value)
    return out


def _ancestors(model: ScriptModel, node: ast.AST) -> set[ast.AST]:
    cache: dict[ast.AST, set[ast.AST]] = model.memo(_ancestors, dict)
    found = cache.get(node)
    if found is None:
        found = cache[node] = set(model.ancestors(node))
    return found


def _names_bound_by(node: ast.AST) -> set[str]:
    if isinstance(node, ast.withitem):
        return _whole_names(node.optional_vars) if node.optional_vars is not None else set()
    if isinstance(node, ast.ExceptHandler):
        return {node.name} if node.name else set()
    if isinstance(node, ast.alias):
        return {(node.asname or node.name).split(".")[0]}
    if isinstance(node, ast.Global | ast.Nonlocal):
        return set(node.names)
    return set()
