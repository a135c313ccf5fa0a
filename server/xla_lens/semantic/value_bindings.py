"""What values a name or a ``self`` attribute may hold: every assignment that binds it, read
so that a caller can prove a fact of all of them (``prepared_loaders``) or give up.

A name is read in its own function (then at module level); a parameter is what the call
sites of this file pass. ``self.attr`` is every store to ``self.attr`` in the methods of the
class; a store to ``.attr`` anywhere else, other than on ``self`` of an unrelated class, may
be the same object, and so is unknown (None), as is any binding that is not a plain or
unpacking assignment (a loop target, ``with``, ``del``, an augmented or starred one).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from .model import dotted
from .params import argument_values, parameter_of

if TYPE_CHECKING:
    from .model import ScriptModel

# (statement, value, (index, length) of an unpacking target or None)
Binding = tuple[ast.stmt, ast.expr, tuple[int, int] | None]


def bindings_of(
    model: ScriptModel, node: ast.Name | ast.Attribute
) -> list[Binding] | tuple[list[ast.AST]] | None:
    """Every value bound to what ``node`` reads: a list of bindings, a 1-tuple with the
    arguments passed to a parameter, or None when one binding cannot be read."""
    if isinstance(node, ast.Name):
        param = parameter_of(model, node)
        if param is not None:
            return (argument_values(model, *param),)
        scope: ast.AST = model.enclosing_function(node) or model.tree
        found = _stores(model, scope, lambda t: isinstance(t, ast.Name) and t.id == node.id)
        if found == [] and scope is not model.tree:
            found = _stores(
                model, model.tree, lambda t: isinstance(t, ast.Name) and t.id == node.id
            )
        return found
    return _attribute_bindings(model, node)


def _attribute_bindings(model: ScriptModel, node: ast.Attribute) -> list[Binding] | None:
    """``self.attr`` in a method: every store to ``self.attr`` in the class's methods. A store
    to ``.attr`` of anything else in the file may be the same object: unknown."""
    fn = model.enclosing_function(node)
    cls = model.parent(fn) if fn is not None else None
    if not (isinstance(node.value, ast.Name) and isinstance(cls, ast.ClassDef)):
        return None
    if _self_name(fn) != node.value.id:
        return None
    return model.memo(
        (_attribute_bindings, cls, node.attr),
        lambda: _class_attribute_bindings(model, cls, node.attr),
    )


def _class_attribute_bindings(
    model: ScriptModel, cls: ast.ClassDef, attr: str
) -> list[Binding] | None:
    """Stores to ``.attr`` in ``cls`` must be on its methods' ``self`` (not in a function
    nested in a method either); outside ``cls``, only on ``self`` of an unrelated class."""
    out: list[Binding] = []
    inside: set[int] = set()
    for store in model.walk(cls):
        if not (
            isinstance(store, ast.Attribute)
            and store.attr == attr
            and isinstance(store.ctx, ast.Store | ast.Del)
        ):
            continue
        inside.add(id(store))
        fn = model.enclosing_function(store)
        if fn is None or model.parent(fn) is not cls:
            return None
        if not (isinstance(store.value, ast.Name) and store.value.id == _self_name(fn)):
            return None
        binding = binding_of(model, store)
        if binding is None:
            return None
        out.append(binding)
    for other in model.nodes_of(ast.Attribute):
        assert isinstance(other, ast.Attribute)
        if other.attr == attr and isinstance(other.ctx, ast.Store) and id(other) not in inside:
            if not _self_of_unrelated_class(model, other, cls):
                return None
    return out


def _self_name(fn: ast.AST | None) -> str | None:
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    args = [*fn.args.posonlyargs, *fn.args.args]
    return args[0].arg if args else None


def _self_of_unrelated_class(model: ScriptModel, store: ast.Attribute, cls: ast.ClassDef) -> bool:
    """``self.attr = ...`` in a class that is neither ``cls`` nor one of its bases or
    subclasses (by name in this file): another object."""
    fn = model.enclosing_function(store)
    other = model.parent(fn) if fn is not None else None
    if not isinstance(other, ast.ClassDef) or not isinstance(store.value, ast.Name):
        return False
    if store.value.id != _self_name(fn):
        return False
    related = other is cls or other.name in {dotted(b) for b in cls.bases}
    return not related and cls.name not in {dotted(b) for b in other.bases}


def _stores(
    model: ScriptModel, scope: ast.AST, matches: Callable[[ast.AST], bool]
) -> list[Binding] | None:
    """The bindings of each store in ``scope`` (not nested scopes) that ``matches``; None
    when one is not a plain or unpacking assignment."""
    out: list[Binding] = []
    for n in model.walk_scope(scope):
        if not isinstance(getattr(n, "ctx", None), ast.Store | ast.Del) or not matches(n):
            continue
        binding = binding_of(model, n)
        if binding is None:
            return None
        out.append(binding)
    return out


def binding_of(model: ScriptModel, store: ast.AST) -> Binding | None:
    """``(statement, value, unpacking)`` of an assignment target; None for any other store
    (a loop or ``with`` target, ``del``, an augmented or starred assignment)."""
    if isinstance(getattr(store, "ctx", None), ast.Del):
        return None
    parent = model.parent(store)
    if isinstance(parent, ast.Assign) and store in parent.targets:
        return parent, parent.value, None
    if isinstance(parent, ast.AnnAssign) and parent.value is not None:
        return parent, parent.value, None
    if isinstance(parent, ast.Tuple | ast.List):
        stmt = model.parent(parent)
        starred = any(isinstance(e, ast.Starred) for e in parent.elts)
        if isinstance(stmt, ast.Assign) and parent in stmt.targets and not starred:
            return stmt, stmt.value, (parent.elts.index(store), len(parent.elts))
    return None
