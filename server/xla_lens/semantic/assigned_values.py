"""What an assignment binds, and whether the value it binds is visibly a host value.

``TensorNames`` reads each frame's assignments: the names a target binds (``self.loss`` as
that path, ``buf[i]`` as ``buf``) and whether the bound value is a Python number or string
rather than a device tensor (``x.item()``, ``float(x)``, a function of the script that
returns host values).
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .model import ScriptModel, method_name
from .node_helpers import dotted

# Methods that hand the value to Python: the point where XLA must run the graph.
HOST_METHODS = frozenset({"item", "tolist", "numpy", "cpu"})
HOST_BUILTINS = frozenset({"float", "int", "bool", "str", "len", "round", "repr", "format"})


def target_names(target: ast.AST) -> list[str]:
    """What an assignment target binds: a name; ``self.loss`` as that dotted path (not
    ``self``: a tensor attribute does not make ``self.iter_num`` a tensor); for ``buf[i]`` the
    container (``buf`` holds a tensor now), not the index."""
    if isinstance(target, ast.Name):  # the common case
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for t in target.elts for n in target_names(t)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    if isinstance(target, ast.Attribute):
        path = dotted(target)
        return [path] if path is not None else []
    if isinstance(target, ast.Subscript):
        return target_names(target.value)
    return []


def is_host_value(
    model: ScriptModel, value: ast.AST | None, host_functions: Container[str] = frozenset()
) -> bool:
    """Values visibly on the host: numbers, strings, ``x.item()``, ``float(x)``, or the
    result of a function of this script that never returns a tensor (``host_functions``)."""
    if value is None:
        return False
    if isinstance(value, ast.Constant | ast.JoinedStr):
        return True
    if isinstance(value, ast.Call):
        if method_name(value) in HOST_METHODS - {"cpu"}:
            return True
        if isinstance(value.func, ast.Name) and value.func.id in HOST_BUILTINS:
            return model.qualname(value.func) is None
        if isinstance(value.func, ast.Name) and value.func.id in host_functions:
            return True
        if _is_own_host_method(model, value, host_functions):
            return True
        if _is_workspace_host_method(model, value):
            return True
    if isinstance(value, ast.BinOp):
        return is_host_value(model, value.left, host_functions) and is_host_value(
            model, value.right, host_functions
        )
    return is_shape_number(value)


# A tensor's metadata is a Python number (or torch.Size) kept on the host: reading it never
# syncs (dlrm's ``mbs = T.shape[0]``, then ``total_loss += L * mbs``, held-out 24).
_SHAPE_ATTRS = frozenset({"shape", "ndim"})
_SHAPE_METHODS = frozenset({"size", "dim", "ndimension", "numel", "nelement", "element_size"})


def is_shape_number(value: ast.AST) -> bool:
    """``t.shape[0]``, ``t.ndim``, ``t.size(1)``: tensor metadata, a host number."""
    if isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Attribute):
        return value.attr in _SHAPE_ATTRS
    return isinstance(value, ast.Call) and method_name(value) in _SHAPE_METHODS


def _is_workspace_host_method(model: ScriptModel, call: ast.Call) -> bool:
    """``agent.update(rollouts)`` of a class of another module whose method steps the
    optimizer and returns Python numbers (held-out 21, a2c-ppo's ``PPO.update``), for every
    class the receiver may hold."""
    if not isinstance(call.func, ast.Attribute) or not isinstance(call.func.value, ast.Name):
        return False
    from .wrapped_steps import workspace_steps  # steps are classified with these values

    found = workspace_steps(model, call)
    return bool(found) and all(f.returns_host for f in found)


def _class_of(model: ScriptModel, node: ast.AST) -> ast.ClassDef | None:
    for a in model.ancestors(node):
        if isinstance(a, ast.ClassDef):
            return a
    return None


def _is_own_host_method(model: ScriptModel, call: ast.Call, host_functions: Container[str]) -> bool:
    """``self.run_batch(x)`` where ``run_batch`` is a method of the calling class that
    returns host values (``return loss.item()``): its result is a Python number."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and func.attr in host_functions
    ):
        return False
    # ``functions`` keeps one def per name: only trust it when it is this class's method.
    method = model.functions.get(func.attr)
    cls = model.parent(method) if method is not None else None
    return isinstance(cls, ast.ClassDef) and cls is _class_of(model, call)
