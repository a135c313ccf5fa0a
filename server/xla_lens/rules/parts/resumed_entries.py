"""Checkpoint entries the script reads back as they come (held-out 58's FastGAN: it saves
``{'g': G.state_dict(), ..., 'g_ema': avg_param_G}`` and resumes with ``ckpt =
torch.load(path)`` then ``avg_param_G = ckpt['g_ema']``).

torch.save of XLA tensors records their device and torch.load puts them back on it; xm.save
writes CPU tensors, so the same load gives them back on the CPU. Through ``load_state_dict``
that is the same program (it copies onto the parameters' device); an entry used as it is
stays on the CPU after the swap: one more transfer per use at best, a device-mismatch error
at worst. A load with ``map_location`` gets the same tensors either way."""

from __future__ import annotations

import ast

from ...semantic.checkpoint_loads import _into_load_state_dict, _plain_key
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, arg_or_keyword, keyword, method_name
from ...semantic.tensors import TensorNames
from ...semantic.workspace_calls import helper_target, parsed_module


def _saved_entries(model: ScriptModel, obj: ast.AST | None) -> dict[str, ast.expr]:
    """The string keys of the dict ``obj`` (a literal, or a name bound to one or filled
    entry by entry) and their values."""
    out: dict[str, ast.expr] = {}
    values: list[ast.AST] = [obj] if obj is not None else []
    if isinstance(obj, ast.Name):
        values += model.assigned_from(obj.id)
        scope = model.enclosing_function(obj) or model.tree
        for n in model.walk_scope(scope):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if (
                        isinstance(t, ast.Subscript)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == obj.id
                        and isinstance(t.slice, ast.Constant)
                        and isinstance(t.slice.value, str)
                    ):
                        out[t.slice.value] = n.value
    for value in values:
        if isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    out[k.value] = v
    return out


TENSOR_METHODS = frozenset({"parameters", "detach", "clone", "cuda", "to", "buffers"})


def _tensor_source(node: ast.AST) -> bool:
    """``node`` takes values from a module's tensors (``p.data for p in G.parameters()``,
    ``x.detach().clone()``)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and method_name(n) in TENSOR_METHODS:
            return True
        if isinstance(n, ast.Attribute) and n.attr == "data":
            return True
    return False


def _returns_tensors(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Some ``return`` of ``fn`` gives tensors taken from a module, directly or through a
    name the function bound so (``flatten = deepcopy(list(p.data for p in m.parameters()))``)."""
    bound = {
        t.id
        for a in ast.walk(fn)
        if isinstance(a, ast.Assign) and _tensor_source(a.value)
        for t in a.targets
        if isinstance(t, ast.Name)
    }
    return any(
        _tensor_source(n.value) or (isinstance(n.value, ast.Name) and n.value.id in bound)
        for n in ast.walk(fn)
        if isinstance(n, ast.Return) and n.value is not None
    )


def _holds_tensors(model: ScriptModel, value: ast.expr, depth: int = 0) -> bool:
    """``value`` holds tensors taken from the model or a device tensor: a name bound from
    such a value, or the result of a script function that returns one (FastGAN's
    ``copy_G_params(netG)``). A count or an accuracy computed from Python numbers is not."""
    if depth > 2:
        return False
    if TensorNames(model).is_tensor(value) or _tensor_source(value):
        return True
    if isinstance(value, ast.Name):
        return any(_holds_tensors(model, v, depth + 1) for v in model.assigned_from(value.id))
    if isinstance(value, ast.Call):
        fn = model.functions.get(value.func.id) if isinstance(value.func, ast.Name) else None
        if fn is None:
            target = helper_target(model, value)  # ``from operation import copy_G_params``
            parsed = parsed_module(target.path) if target is not None else None
            fn = parsed.functions.get(target.function) if parsed and target else None
        return fn is not None and _returns_tensors(fn)
    return False


def _read_as_is(model: ScriptModel, load: ast.Call, keys: set[str]) -> tuple[str, int] | None:
    """The first entry of ``keys`` the checkpoint ``load`` gives is read other than into
    load_state_dict: (key, line)."""
    stmt = model.parent(load)
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return None
    name = stmt.targets[0].id
    scope = model.enclosing_function(load) or model.tree
    for n in model.walk_scope(scope):
        if not (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)):
            continue
        parent = model.parent(n)
        key: ast.AST | None = None
        entry: ast.AST = parent
        if isinstance(parent, ast.Subscript) and parent.value is n:
            key = parent.slice
        elif isinstance(parent, ast.Attribute) and parent.attr in ("get", "pop"):
            call = model.parent(parent)
            if isinstance(call, ast.Call) and call.func is parent and call.args:
                key, entry = call.args[0], call
        if not (isinstance(key, ast.Constant) and key.value in keys) or _plain_key(key):
            continue
        if _into_load_state_dict(model, entry) or isinstance(model.parent(entry), ast.Compare):
            continue
        return str(key.value), n.lineno
    return None


def resumed_entry_reason(model: ScriptModel, save: ast.Call) -> str:
    """Why swapping ``save`` for xm.save changes a resume of this script ("" when nothing
    says so)."""
    entries = _saved_entries(model, arg_or_keyword(save, 0, "obj"))
    keys = {k for k, v in entries.items() if _holds_tensors(model, v)}
    if not keys:
        return ""
    for load in model.calls_to("torch.load"):
        where = keyword(load, "map_location")
        if where is not None and not (
            isinstance(where.value, ast.Constant) and where.value.value is None
        ):
            continue
        found = _read_as_is(model, load, keys)
        if found is not None:
            key, line = found
            return (
                f"line {line_ref(line)} reads the checkpoint's `{key}` entry back as it is "
                f"(`{model.segment(entries[key])}` here): torch.save's XLA tensors load back "
                "onto the XLA device, xm.save's onto the CPU, so after this swap a resumed "
                "run keeps that entry off the device; move it with .to(device) where it is "
                "loaded"
            )
    return ""
