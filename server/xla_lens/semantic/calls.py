"""Which function of this script a call runs, and which parameter receives an argument.

A small call graph for def-use across functions: plain functions (``train(model, device)``),
methods called on ``self`` (``self._run_batch(batch)``) and classes built by name
(``Trainer(model, device)`` runs ``__init__``). Calls this script does not define are out
of reach (None): callers must treat what flows into them as unknown.
"""

from __future__ import annotations

import ast

from .model import ScriptModel

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def enclosing_class(model: ScriptModel, node: ast.AST) -> ast.ClassDef | None:
    for a in model.ancestors(node):
        if isinstance(a, ast.ClassDef):
            return a
    return None


def class_methods(cls: ast.ClassDef) -> dict[str, FunctionNode]:
    return {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}


def classes(model: ScriptModel) -> dict[str, ast.ClassDef]:
    """Module-level classes by name (computed once per parse)."""
    found = model.__dict__.get("_xla_lens_classes")
    if found is None:
        found = model.__dict__["_xla_lens_classes"] = {
            c.name: c
            for c in model.nodes_of(ast.ClassDef)
            if isinstance(c, ast.ClassDef) and model.is_module_level(c)
        }
    return found


def callee(model: ScriptModel, call: ast.Call) -> tuple[FunctionNode, bool] | None:
    """The function this call runs, and whether its first parameter is bound implicitly
    (``self`` of a method or ``__init__``)."""
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in model.imports:
            return None
        cls = classes(model).get(func.id)
        if cls is not None:
            init = class_methods(cls).get("__init__")
            return (init, True) if init is not None else None
        fn = model.functions.get(func.id)
        if fn is not None and model.is_module_level(fn):
            return fn, False
        return None
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    ):
        cls = enclosing_class(model, call)
        if cls is not None:
            method = class_methods(cls).get(func.attr)
            if method is not None:
                return method, True
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        # ``ddpm = DDPM(...)`` then ``ddpm.sample(...)``: a method of this script's class.
        cls = _instance_class(model, func.value.id)
        if cls is not None:
            method = class_methods(cls).get(func.attr)
            if method is not None:
                return method, True
    return None


def _instance_class(model: ScriptModel, name: str) -> ast.ClassDef | None:
    """The class of this script every assignment of ``name`` constructs, if there is one."""
    values = model.assigned_from(name)
    found: ast.ClassDef | None = None
    for v in values:
        if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name)):
            return None
        cls = classes(model).get(v.func.id)
        if cls is None or (found is not None and cls is not found):
            return None
        found = cls
    return found


def parameter_for(
    fn: FunctionNode, bound_self: bool, index: int | None, keyword: str | None
) -> str | None:
    """The parameter name that receives positional ``index`` or keyword ``keyword``."""
    a = fn.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    if bound_self and positional:
        positional = positional[1:]
    if keyword is not None:
        names = {p.arg for p in (*a.args, *a.kwonlyargs)}
        if keyword in names:
            return keyword
        return a.kwarg.arg if a.kwarg else None
    if index is not None and index < len(positional):
        return positional[index]
    return None


# Module methods that return the module itself: ``net = Net().to(device)`` holds a Net.
_SELF_RETURNING = frozenset({"to", "cuda", "train", "eval", "float", "half", "bfloat16"})


def module_forward(model: ScriptModel, call: ast.Call) -> FunctionNode | None:
    """``net(x)`` where ``net`` holds an instance of an ``nn.Module`` class of this script
    (``net = SeqNet(8).to(dev)``): the ``forward`` it runs (defined by the class or by a
    base class of this script). Calling the module runs its forward every step, so what
    the forward does is part of the training step (held-out 21, a2c-ppo's recurrent
    policy splitting its sequence with ``nonzero``)."""
    func = call.func
    if not isinstance(func, ast.Name) or func.id in model.imports:
        return None
    cls = None
    for value in model.assigned_from(func.id):
        while (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in _SELF_RETURNING
        ):
            value = value.func.value
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
            return None
        found = classes(model).get(value.func.id)
        if found is None or (cls is not None and found is not cls):
            return None
        cls = found
    return _forward_of(model, cls) if cls is not None else None


def _forward_of(model: ScriptModel, cls: ast.ClassDef, depth: int = 0) -> FunctionNode | None:
    method = class_methods(cls).get("forward")
    if method is not None:
        return method
    for base in cls.bases:
        local = classes(model).get(base.id) if isinstance(base, ast.Name) else None
        if local is not None and depth < 3:
            return _forward_of(model, local, depth + 1)
    return None


def self_method(
    model: ScriptModel, expr: ast.AST, at: ast.AST
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The method ``self.name`` (``expr``) names in the class around ``at``: a bound method
    handed on (``optimizer.step(self.closure)``, ``xmp.spawn(self._mp_fn, ...)``)."""
    if not (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == "self"
    ):
        return None
    cls = next((a for a in model.ancestors(at) if isinstance(a, ast.ClassDef)), None)
    if cls is None:
        return None
    return next(
        (
            s
            for s in cls.body
            if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == expr.attr
        ),
        None,
    )
