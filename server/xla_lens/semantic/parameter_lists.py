"""A model's own method that returns its Parameters collected in a list: TSM's
``policies = model.get_optim_policies()`` (temporal-shift-module's ``TSN``: it walks
``self.modules()``, appends each module's ``parameters()`` to lists and returns a list of
parameter-group dicts, held-out 120). The list holds the Parameter objects of that moment: the
script then moves the model (``nn.DataParallel(model).cuda()``) and builds ``SGD(policies, ...)``,
so on XLA the optimizer steps the old CPU Parameters and the loss never moves (measured on PJRT
CPU: the probe's repro kept one loss value for five steps). The class is the script's own or a
workspace module's (read from disk, never imported).
"""

from __future__ import annotations

import ast

from .calls import FunctionNode, class_methods, classes
from .model import ScriptModel, dotted

# Calls in the method that reach the module's Parameters.
PARAMETER_SOURCES = frozenset(
    {"parameters", "named_parameters", "modules", "named_modules", "children", "named_children"}
)
LIST_BUILDERS = frozenset({"list", "sorted"})


def parameter_list_owner(model: ScriptModel, call: ast.Call) -> str | None:
    """``model`` when ``call`` is ``model.m()`` and ``m``, a method of ``model``'s class,
    returns a list filled from ``self``'s Parameters; None otherwise."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    owner = dotted(func.value)
    if owner is None:
        return None
    memo: dict[int, str | None] = model.memo(("parameter_lists",), dict)
    if id(call) not in memo:
        method = _method(model, call)
        memo[id(call)] = owner if method is not None and _returns_parameter_list(method) else None
    return memo[id(call)]


def _method(model: ScriptModel, call: ast.Call) -> FunctionNode | None:
    func = call.func
    assert isinstance(func, ast.Attribute)
    if isinstance(func.value, ast.Name):
        own = classes(model)
        value = _latest_value(model, func.value.id, call)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id in own:
                return class_methods(own[value.func.id]).get(func.attr)
    from . import workspace_classes as wc  # noqa: PLC0415 (the workspace layer imports the model)

    if wc.call_root(func) not in wc.class_roots(model):
        return None
    target = wc.class_call(model, call)
    if target is None or target.alternatives:
        return None
    return target.method


def _latest_value(model: ScriptModel, name: str, call: ast.Call) -> ast.expr | None:
    """The value of ``name``'s last plain assignment before ``call`` in the same function,
    when no other statement of that function binds ``name`` before the call."""
    scope = model.enclosing_function(call)
    earlier = [
        a
        for a in model.assignments.get(name, ())
        if a.lineno < call.lineno and model.enclosing_function(a) is scope
    ]
    if not earlier:
        return None
    last = earlier[-1]
    for node in model.name_nodes(name):
        if (
            isinstance(node.ctx, ast.Store)
            and last.lineno < node.lineno < call.lineno
            and model.enclosing_function(node) is scope
        ):
            return None  # bound again by a loop, a ``with``, a tuple target
    return last.value


def _returns_parameter_list(fn: FunctionNode) -> bool:
    """Every ``return`` gives a list display (or a name bound only to one, filled by
    ``append``/``extend``/``+=``), and the method reads ``self``'s Parameters or modules."""
    reads_parameters = any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in PARAMETER_SOURCES
        and _rooted_at_self(n.func.value)
        for n in ast.walk(fn)
    )
    if not reads_parameters:
        return False
    lists = _list_names(fn)
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    if not returns:
        return False
    for ret in returns:
        value = ret.value
        if isinstance(value, ast.List | ast.ListComp):
            continue
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id in LIST_BUILDERS:
                continue
        if isinstance(value, ast.Name) and value.id in lists:
            continue
        return False
    return True


def _list_names(fn: FunctionNode) -> set[str]:
    """Names bound only by ``name = [...]`` in ``fn``."""
    displays: dict[str, int] = {}
    stores: dict[str, int] = {}
    extended = {id(n.target) for n in ast.walk(fn) if isinstance(n, ast.AugAssign)}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in extended:
            stores[n.id] = stores.get(n.id, 0) + 1
        if (
            isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.List | ast.ListComp)
        ):
            displays[n.targets[0].id] = displays.get(n.targets[0].id, 0) + 1
    return {name for name, count in displays.items() if stores.get(name) == count}


def _rooted_at_self(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id == "self"
