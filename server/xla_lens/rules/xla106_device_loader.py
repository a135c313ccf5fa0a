"""XLA106: a distributed training loop iterates a plain DataLoader.

On XLA the batches must be moved to the device ahead of the step and each iteration
must end in a sync; ``pl.MpDeviceLoader`` does both. The loader classification here is
also what XLA107 uses to stay silent on loops this rule will wrap.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import xla_api
from ..semantic.model import XLA_LOADERS, Emitter, ScriptModel, dotted, method_name
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity, Target

CODE = "XLA106"
DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
# Wrappers that yield what they iterate: the loader is their first argument.
PASS_THROUGH = {"enumerate", "iter"}


def _is_tqdm(model: ScriptModel, call: ast.Call) -> bool:
    name = model.call_name(call) or dotted(call.func) or ""
    return name.split(".")[-1] == "tqdm"


def iterated_loader(model: ScriptModel, loop: ast.AST) -> ast.expr | None:
    """The expression a ``for`` loop draws its batches from, through ``enumerate``/``tqdm``."""
    if not isinstance(loop, ast.For | ast.AsyncFor):
        return None
    node: ast.expr = loop.iter
    while isinstance(node, ast.Call) and node.args and not isinstance(node.args[0], ast.Starred):
        func = node.func
        builtin = (
            isinstance(func, ast.Name) and func.id in PASS_THROUGH and func.id not in model.imports
        )
        if builtin or _is_tqdm(model, node):
            node = node.args[0]
        else:
            break
    return node


def _is_xla_loader_value(model: ScriptModel, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    return model.call_name(node) in XLA_LOADERS or method_name(node) == "per_device_loader"


def is_xla_loader(model: ScriptModel, node: ast.AST | None) -> bool:
    """``pl.MpDeviceLoader(...)``, ``....per_device_loader(d)``, or a name bound to one."""
    if node is None:
        return False
    if _is_xla_loader_value(model, node):
        return True
    if isinstance(node, ast.Name):
        return any(_is_xla_loader_value(model, v) for v in model.assigned_from(node.id))
    return False


def is_plain_dataloader(model: ScriptModel, node: ast.AST | None) -> bool:
    """A ``DataLoader(...)`` call, a name bound to one, or a ``*loader*`` name we cannot
    follow (a parameter, a helper's result) that is not bound to an XLA loader."""
    if node is None or is_xla_loader(model, node):
        return False
    if isinstance(node, ast.Call):
        return model.call_name(node) in DATALOADERS
    if isinstance(node, ast.Name):
        values = model.assigned_from(node.id)
        if any(isinstance(v, ast.Call) and model.call_name(v) in DATALOADERS for v in values):
            return True
        return "loader" in node.id.lower()
    return False


def will_wrap(model: ScriptModel, loop: ast.AST) -> bool:
    """True when XLA106 reports this loop (XLA107 then leaves the sync to the loader)."""
    return model.is_distributed and is_plain_dataloader(model, iterated_loader(model, loop))


def device_ref_at(model: ScriptModel, e: Emitter, target: Target, node: ast.AST) -> str:
    """A device variable visibly bound where ``node`` runs, else a device call."""
    fn = model.enclosing_function(node)
    var = model.device_variable
    if fn is not None:
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        for name in (var, "device", "dev", "xla_device"):
            if name is not None and name in params:
                return name
    if var is not None:
        for a in model.assignments.get(var, []):
            afn = model.enclosing_function(a)
            before = (a.lineno, a.col_offset) < (node.lineno, node.col_offset)
            if afn is None and (fn is not None or before):
                return var
            if afn is not None and afn is fn and before:
                return var
    return xla_api.device(e, target)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if not model.is_distributed:
        return
    for loop in model.training_loops:
        loader = iterated_loader(model, loop.node)
        if not is_plain_dataloader(model, loader):
            continue
        assert loader is not None
        e = Emitter(model)
        device = device_ref_at(model, e, ctx.target, loop.node)
        code = f"{e.pl}.MpDeviceLoader({model.segment(loader)}, {device})"
        yield Finding(
            CODE,
            "distributed training loop iterates a plain DataLoader: wrap it in "
            "pl.MpDeviceLoader so batches reach the XLA device ahead of each step and "
            "every iteration ends in a sync",
            model.span(loader),
            Severity.WARNING,
            fix=Fix(f"Wrap in {code}", (Replace(model.span(loader), code), *e.imports)),
        )


HOVER_LOADER = """\
**XLA106 · DataLoader → pl.MpDeviceLoader (distributed)**

On XLA each process iterates its loader through
`torch_xla.distributed.parallel_loader`: it uploads the next batches to the XLA device
while the current step runs and marks the step at every iteration (no `mark_step` needed).

Fix: `for batch in pl.MpDeviceLoader(train_loader, device):`

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `pl.MpDeviceLoader(loader, torch_xla.device())` |
| legacy (1.13) | `pl.MpDeviceLoader(loader, xm.xla_device())` or `pl.ParallelLoader(loader, [device]).per_device_loader(device)` |

`MpDeviceLoader` does not shard the data: keep a `DistributedSampler` (XLA203).
"""

RULE = Rule(
    code=CODE,
    name="device-loader",
    category=Category.DISTRIBUTED,
    summary="Distributed training loop iterates a plain DataLoader → wrap it in pl.MpDeviceLoader",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch.utils.data.DataLoader": HOVER_LOADER,
        "torch.utils.data.dataloader.DataLoader": HOVER_LOADER,
        "torch_xla.distributed.parallel_loader.MpDeviceLoader": HOVER_LOADER,
        "torch_xla.distributed.parallel_loader.ParallelLoader": HOVER_LOADER,
    },
)
