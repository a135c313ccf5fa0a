"""Instances of the script's own plain classes (meters, configs): ``AverageMeter()`` defined in
the script or a module of its workspace (``from hubert.utils import Metric``, held-out 42), with
no torch base. Their attributes hold what their methods are given, so a name like
``validation_loss`` bound to one says nothing of a tensor; ``meter.avg`` is a host value where
every argument the frame hands the meter is one (``meter.update(loss.item())``). Shared by
``tensors.TensorNames``."""

from __future__ import annotations

import ast
from collections.abc import Container

from .assigned_values import is_host_value
from .model import ScriptModel
from .node_helpers import dotted


def plain_object(model: ScriptModel, value: ast.AST | None) -> bool:
    """``AverageMeter()``: an instance of a class of this script, or of a module of its
    workspace (``from utils import Metric``), that is no torch module (its attributes are what
    its methods store, judged where they are read, not by its name)."""
    from .calls import classes

    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return False
    if model.assignments.get(value.func.id):
        return False
    cls = classes(model).get(value.func.id)
    if cls is not None:
        return not any(_torch_base(model.qualname(b) or dotted(b)) for b in cls.bases)
    return _plain_workspace_class(model, value.func)


def meter_attribute(
    model: ScriptModel,
    scope: ast.AST,
    value: ast.AST | None,
    bindings: dict[str, list[ast.AST | None]],
    host_fns: Container[str],
) -> bool:
    """``meter.avg`` where every binding of ``meter`` in the frame is a plain object and
    every argument the frame hands its methods is visibly a host value (``loss.item()``):
    its attributes can only hold what its methods are given."""
    if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)):
        return False
    name = value.value.id
    values = bindings.get(name)
    if not values or not all(plain_object(model, v) for v in values):
        return False
    for node in model.walk_scope(scope):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
        ):
            given = [*node.args, *(k.value for k in node.keywords)]
            if not all(is_host_value(model, a, host_fns) for a in given):
                return False
    return True


def _torch_base(name: str | None) -> bool:
    return (name or "").startswith(("torch", "nn.")) or name in {"Module", "Tensor"}


def _plain_workspace_class(model: ScriptModel, callee: ast.Name) -> bool:
    """A class another module of the workspace defines, none of whose bases (in the
    workspace or not) is a torch class: only then is it known not to be a tensor or module."""
    from .workspace_classes import chain, class_reference, script_module

    found = class_reference(script_module(model), callee)
    if found is None:
        return False
    for cls in chain(found):
        for base in cls.node.bases:
            name = dotted(base)
            if _torch_base(name):
                return False
            if class_reference(cls.module, base) is None and name != "object":
                return False  # a library base: it could be anything
    return True


__all__ = ["meter_attribute", "plain_object"]
