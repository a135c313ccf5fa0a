"""XLA205 for DDP ``device_ids`` handed to code this file does not show.

``task.prepare_distributed(device_ids=[device])`` (timm's training tasks) builds the
DistributedDataParallel wrapper inside a library. On XLA, DDP accepts an indexed XLA device
there (``torch_xla.device()`` is ``xla:0`` in every process, and DDP then still moves each
forward's inputs onto it); ``torch.device("xla")`` without an index fails when DDP is built
("set_construction_data_and_log(): incompatible function arguments", torch 2.9), and a CUDA
index names nothing. Dropping them is the DDP finding's fix where DDP is visible; here the
call's meaning is out of reach, so the finding says what to check and has no fix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.calls import callee
from ...semantic.model import ScriptModel, dotted, keyword
from ...semantic.workspace_calls import helper_target, parsed_module
from ..base import Finding, Severity


def unseen_device_ids_calls(model: ScriptModel) -> Iterator[tuple[ast.Call, ast.keyword]]:
    """Calls handing a non-empty ``device_ids=`` to code this file does not show (neither
    torch's own nor a function of this file): DDP is likely built there."""
    for call in model.calls:
        kw = keyword(call, "device_ids")
        if kw is None or _empty(kw.value):
            continue
        name = model.call_name(call) or ""
        if name.split(".")[0] in {"torch", "torch_xla"}:
            continue  # DDP itself, DataParallel (XLA110): reported where they are
        if callee(model, call) is not None:
            continue  # this file's function: its DDP call is reported where it is
        if _workspace_helper_builds_no_wrapper(model, call):
            continue
        yield call, kw


WRAPPERS = ("DistributedDataParallel", "DDP", "DataParallel")


def _workspace_helper_builds_no_wrapper(model: ScriptModel, call: ast.Call) -> bool:
    """A workspace function whose body builds no DDP/DataParallel and hands ``device_ids`` to
    nothing (MSST's ``save_weights``, held-out 144, reads only ``len(device_ids)``)."""
    target = helper_target(model, call)
    module = parsed_module(target.path) if target is not None else None
    fn = module.functions.get(target.function) if module is not None and target else None
    if fn is None:
        return False
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func) or ""
        if name.rpartition(".")[2] in WRAPPERS or keyword(node, "device_ids") is not None:
            return False
    return True


def helper_device_ids_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    if model.uses_torch_xla:
        return  # an XLA script passes its own device
    for call, kw in unseen_device_ids_calls(model):
        shown = model.segment(call.func)
        yield Finding(
            code,
            f"`{model.segment(kw)}` handed to `{shown}`, whose code xla-lens cannot see: if "
            "it builds DistributedDataParallel with them, on XLA they must be the process's "
            'own indexed device (torch.device("xla") without an index fails there) or be left '
            "out, and without them DDP no longer moves each forward's inputs onto the device",
            model.span(call),
            Severity.WARNING,
            manual=f"check what `{shown}` does with device_ids: pass [torch_xla.device()] "
            "(each XLA process owns one device), or leave them out and move every forward "
            "input with .to(device)",
        )


def _empty(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and node.value is None:
        return True
    return isinstance(node, ast.List | ast.Tuple) and not node.elts
