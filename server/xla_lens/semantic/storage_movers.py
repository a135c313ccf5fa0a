"""``torch.load(path, map_location=lambda storage, loc: storage.cuda(gpu))``: a callable that
moves each loaded storage onto a CUDA device (KAIR's optimizer reload, held-out 31).

Rewriting the move as ``storage.to(torch_xla.device())`` breaks the load: a storage's ``to``
takes its device by keyword only (TypeError), and even then ``torch.load`` cannot restore a
storage tagged with an XLA device. The XLA way is to load on the CPU and let
``load_state_dict`` copy onto the device (XLA115), so the move inside the lambda is not a
device move of its own (XLA101 leaves it).
"""

from __future__ import annotations

import ast

from .model import ScriptModel, is_cuda_string, keyword, method_name, receiver

LOADS = frozenset({"torch.load"})


# Loads that take a ``map_location``, and its position among their arguments.
MAP_LOCATION_AT = {"torch.load": 1, "torch.hub.load_state_dict_from_url": 2}


def map_location_value(model: ScriptModel, call: ast.Call) -> ast.expr | None:
    """What a ``torch.load`` (or ``torch.hub.load_state_dict_from_url``) call passes as
    ``map_location`` (keyword or positional argument)."""
    at = MAP_LOCATION_AT.get(model.call_name(call) or "")
    if at is None:
        return None
    kw = keyword(call, "map_location")
    if kw is not None:
        return kw.value
    return call.args[at] if len(call.args) > at else None


def maps_storages_to_cuda(model: ScriptModel, value: ast.AST | None) -> bool:
    """``{"cuda:0": f"cuda:{rank}"}``: a map_location dict that restores storages onto a
    CUDA device (a checkpoint saved on CUDA then needs CUDA to load)."""
    from .checkpoint_loads import cuda_device_text

    return isinstance(value, ast.Dict) and any(
        v is not None and cuda_device_text(model, v) for v in value.values
    )


def moves_storage_to_cuda(model: ScriptModel, value: ast.AST | None) -> bool:
    """``lambda storage, loc: storage.cuda(...)`` / ``storage.to("cuda...")``: a map_location
    callable that returns its first parameter moved onto CUDA."""
    if not isinstance(value, ast.Lambda):
        return False
    params = [*value.args.posonlyargs, *value.args.args]
    body = value.body
    if not params or not isinstance(body, ast.Call):
        return False
    recv = receiver(body)
    if not (isinstance(recv, ast.Name) and recv.id == params[0].arg):
        return False
    name = method_name(body)
    if name == "cuda":
        return True
    if name == "to":
        device = body.args[0] if body.args else None
        kw = keyword(body, "device")
        device = kw.value if kw is not None else device
        return device is not None and is_cuda_string(device)
    return False


def in_storage_mover(model: ScriptModel, call: ast.Call) -> bool:
    """``call`` is the move of such a map_location callable, passed to ``torch.load``."""
    lam = model.parent(call)
    if not (isinstance(lam, ast.Lambda) and lam.body is call):
        return False
    holder = model.parent(lam)
    if isinstance(holder, ast.keyword):
        holder = model.parent(holder)
    return (
        isinstance(holder, ast.Call)
        and map_location_value(model, holder) is lam
        and moves_storage_to_cuda(model, lam)
    )


__all__ = ["in_storage_mover", "map_location_value", "moves_storage_to_cuda"]
