"""Which workspace class a method call's receiver holds inside a workspace method, read from
the code around it (never imported or run).

``MetricLogger.synchronize_between_processes`` does ``for meter in self.meters.values():
meter.synchronize_between_processes()`` where ``__init__`` says ``self.meters =
defaultdict(SmoothedValue)``: the call runs ``SmoothedValue``'s method, whose CUDA tensor the
script never shows. ``receiver_constructor`` names the constructor expression behind such a
receiver: a local built by ``Cls(...)``, an item of a container attribute of the class
(``defaultdict(Cls)``, ``self.x[k] = Cls(...)``, ``self.x.append(Cls(...))``) read by
subscript or by a ``for`` over it. Every binding of the receiver must agree; anything else
(a parameter, ``with ... as``, an attribute written from elsewhere) gives None.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from typing import TypeVar

M = TypeVar("M")  # the module a class (and so its constructor expression) is read in
Constructor = tuple[ast.expr, M]
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
SELF_NAMES = frozenset({"self", "cls"})
DEFAULTDICTS = frozenset({"defaultdict", "collections.defaultdict"})
EMPTY_CONTAINERS = frozenset({"dict", "list", "OrderedDict", "collections.OrderedDict"})
_ITEM_ADDERS = frozenset({"append", "setdefault", "insert"})
_MISSING = object()


def receiver_constructor(
    classes: Sequence[tuple[ast.ClassDef, M]], module: M, region: ast.AST, receiver: ast.expr
) -> Constructor[M] | None:
    """The constructor expression (and the module to read it in) of the object ``receiver``
    names in ``region``, a function of ``module``: a method of ``classes[0]`` (whose bases
    follow), or a plain function when ``classes`` is empty."""
    if isinstance(receiver, ast.Subscript):
        attr = _self_attr(receiver.value)
        return _element(classes, attr) if attr is not None else None
    if not isinstance(receiver, ast.Name) or receiver.id in SELF_NAMES:
        return None
    found: list[Constructor[M] | None] = []
    for node, parent in _nodes_with_parents(region):
        if _binds_otherwise(node, receiver.id, region):
            return None
        if (
            isinstance(node, ast.Name)
            and node.id == receiver.id
            and isinstance(node.ctx, ast.Store)
        ):
            found.append(_binding(classes, module, node, parent))
    return _agreed(found)


def _nodes_with_parents(region: ast.AST) -> Iterable[tuple[ast.AST, ast.AST | None]]:
    stack: list[tuple[ast.AST, ast.AST | None]] = [(region, None)]
    while stack:
        node, parent = stack.pop()
        yield node, parent
        stack.extend((child, node) for child in ast.iter_child_nodes(node))


def _binds_otherwise(node: ast.AST, name: str, region: ast.AST) -> bool:
    """A binding of ``name`` other than an assignment or a ``for`` target: its value is
    not read here."""
    if isinstance(node, ast.arg):
        return node.arg == name
    if isinstance(node, ast.Global | ast.Nonlocal):
        return name in node.names
    if isinstance(node, ast.ExceptHandler):
        return node.name == name
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    if isinstance(node, FunctionNode | ast.ClassDef):
        return node is not region and node.name == name
    return False


def _binding(
    classes: Sequence[tuple[ast.ClassDef, M]],
    module: M | None,
    name: ast.Name,
    parent: ast.AST | None,
) -> Constructor[M] | None:
    if isinstance(parent, ast.Assign) and name in parent.targets:
        return _value_constructor(classes, module, parent.value)
    if isinstance(parent, ast.For | ast.AsyncFor) and parent.target is name:
        return _iterated(classes, parent.iter, tuple_index=None)
    if isinstance(parent, ast.Tuple) and name in parent.elts:
        return None  # unpacked: only ``for k, v in self.x.items()`` is read, below
    return None


def _value_constructor(
    classes: Sequence[tuple[ast.ClassDef, M]], module: M, value: ast.expr
) -> Constructor[M] | None:
    if isinstance(value, ast.Subscript):
        attr = _self_attr(value.value)
        return _element(classes, attr) if attr is not None else None
    if isinstance(value, ast.Call) and _dotted(value.func) is not None:
        return value.func, module
    return None


def _iterated(
    classes: Sequence[tuple[ast.ClassDef, M]], it: ast.expr, tuple_index: int | None
) -> Constructor[M] | None:
    """The element constructor of ``for x in self.attr`` / ``self.attr.values()``."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "list":
        it = it.args[0] if len(it.args) == 1 else it
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and not it.args:
        if it.func.attr == "values":
            it = it.func.value
        else:
            return None
    attr = _self_attr(it)
    return _element(classes, attr) if attr is not None else None


def _element(classes: Sequence[tuple[ast.ClassDef, M]], attr: str) -> Constructor[M] | None:
    """The one class ``self.<attr>``'s items are built from, over the class's methods."""
    found: list[Constructor[M] | None] = []
    for cls, module in classes:
        for stmt in cls.body:
            if not isinstance(stmt, FunctionNode):
                continue
            for node in ast.walk(stmt):
                item = _item_write(node, attr, module)
                if item is not _MISSING:
                    found.append(item)  # type: ignore[arg-type]
    return _agreed([f for f in found if f is not False])  # type: ignore[comparison-overlap]


def _item_write(node: ast.AST, attr: str, module: M) -> object:
    """What ``node`` says of ``self.<attr>``'s items: a constructor, False (neutral: an
    empty container, an item of unknown value), None (something else), or _MISSING."""
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if _self_attr(target) == attr:
                return _container(node.value, module) if isinstance(node, ast.Assign) else None
            if isinstance(target, ast.Subscript) and _self_attr(target.value) == attr:
                return _item_value(node.value, module)
        return _MISSING
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _ITEM_ADDERS
        and _self_attr(node.func.value) == attr
        and node.args
    ):
        return _item_value(node.args[-1], module)
    return _MISSING


def _container(value: ast.expr | None, module: M) -> object:
    if isinstance(value, ast.Dict | ast.List) and not (
        value.keys if isinstance(value, ast.Dict) else value.elts
    ):
        return False
    if isinstance(value, ast.Call) and not value.keywords:
        callee = _dotted(value.func)
        if callee in EMPTY_CONTAINERS and not value.args:
            return False
        if callee in DEFAULTDICTS and len(value.args) == 1 and _dotted(value.args[0]):
            return value.args[0], module
    return None


def _item_value(value: ast.expr | None, module: M) -> object:
    if isinstance(value, ast.Call) and _dotted(value.func) is not None:
        return value.func, module
    return False  # a value passed in (``add_meter(name, meter)``): says nothing either way


def _agreed(found: list[Constructor[M] | None]) -> Constructor[M] | None:
    if not found or any(f is None for f in found):
        return None
    first = found[0]
    assert first is not None
    same = all(ast.dump(f[0]) == ast.dump(first[0]) for f in found if f is not None)
    return first if same else None


def _self_attr(node: ast.expr) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in SELF_NAMES
    ):
        return node.attr
    return None


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    return None
