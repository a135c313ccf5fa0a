"""What a name unpacked from a script function's result holds, and what a nested function
reads of its enclosing function's names.

``(loss, lr), elapsed = gpu_timer(train_step)`` binds ``loss`` to element 0 of element 0 of
what ``gpu_timer`` returns; ``gpu_timer`` returns ``result, elapsed`` with ``result =
closure()``, its parameter called, so element 0 is what the argument passed for it,
``train_step``, returns: ``float(loss), lr`` (I-JEPA, held-out 30, where a float logged in a
nested ``log_stats()`` was taken for a device tensor). The values are the candidate
expressions of every return and every binding on the way, a superset of what reaches the
name; any step that cannot be followed (a return of another shape, a starred element, a
function defined twice, a parameter given something other than a script function) gives
None, and the caller knows nothing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .model import ScriptModel
from .reaching import UNKNOWN, binding_entries
from .workspace_calls import helper_target, parsed_module

MAX_HOPS = 6


def unpacked_from_call(stmt: ast.AST, name: str) -> tuple[ast.Call, tuple[int, ...]] | None:
    """``(call, path)`` when ``stmt`` is ``<tuple of names> = call(...)`` binding ``name`` at
    ``path`` (element indexes, outermost first)."""
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)):
        return None
    for target in stmt.targets:
        path = _path_to(target, name)
        if path:
            return stmt.value, path
    return None


def _path_to(target: ast.AST, name: str) -> tuple[int, ...] | None:
    if not isinstance(target, ast.Tuple | ast.List):
        return None
    if any(isinstance(e, ast.Starred) for e in target.elts):
        return None
    for i, element in enumerate(target.elts):
        if isinstance(element, ast.Name) and element.id == name:
            return (i,)
        inner = _path_to(element, name)
        if inner:
            return (i, *inner)
    return None


def returned_elements(
    model: ScriptModel, call: ast.Call, path: tuple[int, ...], hops: int = 0
) -> list[ast.expr] | None:
    """Every expression that can be element ``path`` of what ``call`` returns, for a call of
    a function of this script or of a workspace module; None when that cannot be followed.
    Of a workspace module's function only the constants it returns and what the functions
    the script passes it return are followed (the rest is judged in its own module)."""
    if hops > MAX_HOPS:
        return None
    fn = _script_function(model, call.func)
    foreign = False
    if fn is None:
        fn, foreign = _workspace_function(model, call), True
        if fn is None:
            return None
    returns = [n for n in model.walk_scope(fn) if isinstance(n, ast.Return)]
    if not returns or _may_fall_off(fn):
        return None
    out: list[ast.expr] = []
    for r in returns:
        if r.value is None:
            return None
        found = _element(model, _Frame(fn, call, foreign), r.value, path, hops)
        if found is None:
            return None
        out.extend(found)
    return out


@dataclass(frozen=True)
class _Frame:
    fn: ast.FunctionDef | ast.AsyncFunctionDef  # the called function
    call: ast.Call  # the call, in the script
    foreign: bool  # ``fn`` is another module's: its own values are not judged here


def _element(
    model: ScriptModel, frame: _Frame, expr: ast.expr, path: tuple[int, ...], hops: int
) -> list[ast.expr] | None:
    fn = frame.fn
    if not path:
        if frame.foreign and not isinstance(expr, ast.Constant):
            return None
        return [expr]
    if hops > MAX_HOPS:
        return None
    if isinstance(expr, ast.Tuple | ast.List):
        elements = expr.elts
        if any(isinstance(e, ast.Starred) for e in elements) or len(elements) <= path[0]:
            return None
        return _element(model, frame, elements[path[0]], path[1:], hops)
    if isinstance(expr, ast.Name):
        if _parameter_index(fn, expr.id) is not None:
            return None
        entries = (
            _plain_bindings(model, fn, expr.id)
            if frame.foreign
            else binding_entries(model, fn, expr.id)
        )
        if not entries:
            return None
        out: list[ast.expr] = []
        for _node, value, whole in entries:
            if not whole or value is UNKNOWN:
                return None
            found = _element(model, frame, value, path, hops + 1)
            if found is None:
                return None
            out.extend(found)
        return out
    if not isinstance(expr, ast.Call):
        return None
    if isinstance(expr.func, ast.Name) and not expr.args and not expr.keywords:
        # ``closure()``: the function's parameter, called; what the caller passed returns it.
        index = _parameter_index(fn, expr.func.id)
        if index is not None:
            passed = _argument(frame.call, index, expr.func.id)
            if passed is None or _script_function(model, passed) is None:
                return None
            return returned_elements(model, ast.Call(passed, [], []), path, hops + 1)
    if frame.foreign:
        return None
    return returned_elements(model, expr, path, hops + 1)


def _plain_bindings(
    model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str
) -> list[tuple] | None:
    """A workspace function's ``name = value`` bindings of ``name`` (its module is not
    indexed with the script); None when it binds the name any other way (a ``for`` target,
    an unpacking, ``+=``, ``del``, ``except ... as``, an import, a nested ``def``, a
    ``global`` declaration)."""
    out: list[tuple] = []
    stores = 0
    for node in model.walk_scope(fn):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            if len(node.targets) != 1:
                return None
            out.append((node, node.value, True))
        elif isinstance(node, ast.Name) and node.id == name:
            stores += not isinstance(node.ctx, ast.Load)
        elif isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
            return None
        elif (
            isinstance(node, ast.ExceptHandler | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == name
        ) or (isinstance(node, ast.ClassDef) and node.name == name):
            return None
        elif isinstance(node, ast.alias) and (node.asname or node.name).split(".")[0] == name:
            return None
    return out if stores == len(out) else None


def _workspace_function(
    model: ScriptModel, call: ast.Call
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    target = helper_target(model, call)
    module = parsed_module(target.path) if target is not None else None
    return module.functions.get(target.function) if module is not None and target else None


def _script_function(
    model: ScriptModel, func: ast.expr
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The one ``def`` of this name in the script, for a plain name no import binds."""
    if not isinstance(func, ast.Name) or model.qualname(func) is not None:
        return None
    defs = model.memo(_script_function, lambda: _defs_by_name(model))
    found = defs.get(func.id, ())
    return found[0] if len(found) == 1 else None


def _defs_by_name(model: ScriptModel) -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
    out: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
        assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        out.setdefault(fn.name, []).append(fn)
    # A name also bound another way (a class, ``f = other``) is not surely the def.
    rebound = {c.name for c in model.nodes_of(ast.ClassDef)}  # type: ignore[attr-defined]
    return {
        name: fns
        for name, fns in out.items()
        if name not in rebound and not model.assignments.get(name)
    }


def _may_fall_off(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """The body can end without a ``return`` (then the call gives None)."""
    last = fn.body[-1] if fn.body else None
    return not isinstance(last, ast.Return | ast.Raise)


def _parameter_index(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> int | None:
    args = fn.args
    for i, a in enumerate([*args.posonlyargs, *args.args]):
        if a.arg == name:
            return i
    if any(a.arg == name for a in args.kwonlyargs) or any(
        a is not None and a.arg == name for a in (args.vararg, args.kwarg)
    ):
        return -1
    return None


def _argument(call: ast.Call, index: int, name: str) -> ast.expr | None:
    """What ``call`` passes for the parameter ``name`` at ``index`` (-1: keyword-only)."""
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    if 0 <= index < len(call.args):
        return call.args[index]
    return None


def enclosing_frame_entries(model: ScriptModel, name: ast.Name) -> list[tuple] | None:
    """For a read of a name its own (nested) function never binds: the bindings of the
    nearest enclosing function that binds it, every one of them (a closure reads whichever
    ran last); None when no enclosing function binds it, or the name is declared
    ``global``/``nonlocal`` somewhere on the way."""
    fn = model.enclosing_function(name)
    while fn is not None:
        outer = model.enclosing_function(fn)
        if outer is None:
            return None
        if _parameter_index(fn, name.id) is not None or binding_entries(model, fn, name.id):
            return None
        entries = binding_entries(model, outer, name.id)
        if entries:
            if _parameter_index(outer, name.id) is not None:
                return None
            return entries
        fn = outer
    return None


__all__ = ["enclosing_frame_entries", "returned_elements", "unpacked_from_call"]
