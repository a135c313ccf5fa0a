"""XLA205: what a ``**kw`` unpacked into ``DistributedDataParallel(...)`` may hold.

``DDP(model, device_ids=[rank], **ddp_args)`` (open_clip's ``ddp_args = {}`` with
``static_graph`` added under a flag) still names a CUDA device: ``**ddp_args`` cannot un-name
it (a second ``device_ids`` would be a TypeError). Dropping ``device_ids`` is meaning-preserving
only if the dict holds no ``output_device``: DDP without ``device_ids`` refuses one
("device_ids and output_device arguments only work with single-device/multiple-device GPU
modules", ValueError). So the dict is followed in its own frame: every binding a dict display
(or ``dict(...)``) with literal keys, every later change ``kw["key"] = ...`` or
``kw.update({...})`` with literal keys, every other read a ``**kw`` argument. Anything else
(a parameter, a dict handed to other code) is out of reach: the fix waits for review.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, const_str, method_name, receiver

FORBIDDEN = frozenset({"output_device", "device_ids"})


def kwargs_review_reason(model: ScriptModel, call: ast.Call) -> str | None:
    """None when every ``**`` argument of ``call`` provably holds neither ``output_device``
    nor ``device_ids``; otherwise why dropping ``device_ids`` needs a person to look."""
    for kw in call.keywords:
        if kw.arg is not None:
            continue
        shown = model.segment(kw.value)
        why = _unknown_keys(model, kw.value)
        if why is not None:
            return (
                f"`{shown}` {why}: if it holds output_device, DDP without device_ids raises "
                "(ValueError); leave that key out too"
            )
    return None


def _unknown_keys(model: ScriptModel, value: ast.expr) -> str | None:
    if not isinstance(value, ast.Name):
        return "is built where xla-lens cannot follow it"
    name = value.id
    frame = model.enclosing_function(value)
    if frame is not None:
        args = frame.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        if any(p is not None and p.arg == name for p in params):
            return "comes from the caller"
    bound = False
    for node in model.walk(frame if frame is not None else model.tree):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        parent = model.parent(node)
        if isinstance(node.ctx, ast.Store):
            if not (isinstance(parent, ast.Assign) and parent.targets == [node]):
                return "is bound where xla-lens cannot read its keys"
            keys = _literal_keys(parent.value)
            if keys is None:
                return "is built where xla-lens cannot read its keys"
            if keys & FORBIDDEN:
                return "may hold output_device"
            bound = True
        elif isinstance(node.ctx, ast.Del):
            return "is deleted and rebound"
        elif isinstance(parent, ast.keyword) and parent.arg is None:
            continue  # ``**kw``: read, not changed
        elif isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store):
            key = const_str(parent.slice)
            if key is None:
                return "gets keys xla-lens cannot read"
            if key in FORBIDDEN:
                return "may hold output_device"
        elif _update_call(model, parent) is not None:
            update = _update_call(model, parent)
            assert update is not None
            if receiver(update) is not node or len(update.args) > 1:
                return "is also handed to other code"
            keys = _literal_keys(update.args[0]) if update.args else set()
            if keys is None:
                return "gets keys xla-lens cannot read"
            keys |= {k.arg for k in update.keywords if k.arg is not None}
            if any(k.arg is None for k in update.keywords) or keys & FORBIDDEN:
                return "may hold output_device"
        else:
            return "is also handed to other code, which may add keys"
    return None if bound else "is built where xla-lens cannot follow it"


def _update_call(model: ScriptModel, parent: ast.AST | None) -> ast.Call | None:
    """``kw.update(...)`` when ``parent`` is its ``kw.update``."""
    call = model.parent(parent) if isinstance(parent, ast.Attribute) else None
    if isinstance(call, ast.Call) and call.func is parent and method_name(call) == "update":
        return call
    return None


def _literal_keys(value: ast.expr) -> set[str] | None:
    if isinstance(value, ast.Dict):
        keys = [const_str(k) if k is not None else None for k in value.keys]
        return None if any(k is None for k in keys) else set(keys)  # type: ignore[arg-type]
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "dict"
        and not value.args
        and all(k.arg is not None for k in value.keywords)
    ):
        return {k.arg for k in value.keywords}  # type: ignore[misc]
    return None
