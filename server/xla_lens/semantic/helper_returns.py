"""Whether a helper of the workspace returns host values, by its text alone (read, never run).

``pesq_score(...)`` of a workspace module whose value is ``np.mean(...)`` (MP-SENet, held-out
144: its ``.item()`` read nothing from the device). And ``tracker.get_dict()``, ``tracker``
bound only to instances of one class of this script or of a workspace module whose method of
that name returns Python numbers (``{"loss": losses.mean().item(), ...}``, ``float(...)``).

InstructLLaMA's LoRA trainer (held-out 145) keeps ``best_val_loss = np.inf`` and updates it from
``val_tracker.get_dict(reset=True)["loss"]``, a ``StatsTracker`` of its utils package: judged a
device tensor, the best-loss message was moved into a step closure by a safe fix (later than
the checkpoint's, for nothing). The text is read, never run; a method the class does not define
itself (inherited) is not looked for.
"""

from __future__ import annotations

import ast

from .model import SCOPE_TYPES, ScriptModel, method_name
from .workspace_calls import helper_target, parsed_module, workspace_class

HOST_TEXT_CALLS = frozenset({"float", "int", "round", "bool", "len", "str"})
HOST_TEXT_METHODS = frozenset({"item", "tolist"})
HOST_LIBRARIES = frozenset({"numpy", "math", "statistics"})


def function_returns_host(model: ScriptModel, call: ast.Call) -> bool:
    """``call`` runs a workspace function whose every return is a host value by its text: a
    number, ``.item()``, a NumPy or math call, or a name its body binds only to those."""
    target = helper_target(model, call)
    if target is None:
        return False
    module = parsed_module(target.path)
    fn = module.functions.get(target.function) if module is not None else None
    if fn is None:
        return False
    libraries = {local for local, full in module.imports.items() if full in HOST_LIBRARIES}
    return model.memo(
        ("helper_returns", target.path, target.function),
        lambda: _all_host(_returns(fn), fn, libraries),
    )


def _all_host(returns: list[ast.Return], fn: ast.AST, libraries: set[str]) -> bool:
    if not returns:
        return False
    for r in returns:
        value = r.value
        if isinstance(value, ast.Name):
            value = _last_binding(fn, r, value.id)
        if value is None or not _host_text(value, libraries):
            return False
    return True


def _last_binding(fn: ast.AST, ret: ast.Return, name: str) -> ast.expr | None:
    """What ``name`` holds at ``return name`` at the top of the body: its last plain
    assignment before it (None when something else binds it there)."""
    body = getattr(fn, "body", [])
    if ret not in body:
        return None
    last: ast.expr | None = None
    for stmt in body[: body.index(ret)]:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name
        ):
            last = stmt.value
        elif any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for n in ast.walk(stmt)
        ):
            last = None
    return last


def method_returns_host(model: ScriptModel, recv: ast.Name, method: str) -> bool:
    return model.memo(
        ("instance_returns", recv.id, method), lambda: _returns_host(model, recv.id, method)
    )


def _returns_host(model: ScriptModel, name: str, method: str) -> bool:
    values = model.assigned_from(name)
    if not values or not all(
        isinstance(v, ast.Call) and isinstance(v.func, ast.Name) for v in values
    ):
        return False
    classes = {v.func.id for v in values}  # type: ignore[union-attr]
    if len(classes) != 1:
        return False
    cls = _class_named(model, classes.pop())
    if cls is None:
        return False
    fn = next(
        (
            s
            for s in cls.body
            if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == method
        ),
        None,
    )
    if fn is None:
        return False
    returns = list(_returns(fn))
    return _all_host(returns, fn, set())


def _class_named(model: ScriptModel, name: str) -> ast.ClassDef | None:
    for node in model.tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    if name in model.functions:
        return None
    return workspace_class(model, name)  # None for a library's class


def _returns(fn: ast.AST) -> list[ast.Return]:
    out: list[ast.Return] = []
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            out.append(node)
        if not isinstance(node, SCOPE_TYPES):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _host_text(expr: ast.expr | None, libraries: set[str]) -> bool:
    """A host value by its text: ``libraries`` are the local names of NumPy / math there."""
    if isinstance(expr, ast.Constant | ast.JoinedStr):
        return True
    if isinstance(expr, ast.Dict):
        return all(_host_text(v, libraries) for v in expr.values)
    if isinstance(expr, ast.List | ast.Tuple | ast.Set):
        return all(_host_text(e, libraries) for e in expr.elts)
    if isinstance(expr, ast.Call):
        if method_name(expr) in HOST_TEXT_METHODS and isinstance(expr.func, ast.Attribute):
            return True
        root = expr.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root is not expr.func and root.id in libraries:
            return True  # ``np.mean(scores)``
        return isinstance(expr.func, ast.Name) and expr.func.id in HOST_TEXT_CALLS
    if isinstance(expr, ast.BinOp):
        return _host_text(expr.left, libraries) and _host_text(expr.right, libraries)
    if isinstance(expr, ast.UnaryOp):
        return _host_text(expr.operand, libraries)
    if isinstance(expr, ast.IfExp):
        return _host_text(expr.body, libraries) and _host_text(expr.orelse, libraries)
    return False
