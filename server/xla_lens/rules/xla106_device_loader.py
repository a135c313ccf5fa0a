"""XLA106: a distributed training loop iterates a plain DataLoader.

On XLA the batches must be moved to the device ahead of the step and each iteration
must end in a sync; ``pl.MpDeviceLoader`` does both. The loader classification here is
also what XLA107 uses to stay silent on loops this rule will wrap.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import device_sites, xla_api
from ..semantic.loaders import Source, classify, iterated_loader
from ..semantic.model import Emitter, ScriptModel
from .base import Category, Finding, Fix, Replace, Rule, RuleContext, Severity, Target

CODE = "XLA106"
REVIEW_PARAMETER = (
    "the loader comes from outside this function ({name}); if a caller already wraps it in "
    "pl.MpDeviceLoader, wrapping it again breaks training (the loader thread fails and no "
    "step runs, with exit code 0)"
)


def will_wrap(model: ScriptModel, loop: ast.AST) -> bool:
    """True when XLA106 wraps this loop's loader with a safe fix (XLA107 then leaves the
    sync to the loader)."""
    return model.is_distributed and classify(model, iterated_loader(model, loop)) is Source.PLAIN


def device_ref_at(model: ScriptModel, e: Emitter, target: Target, node: ast.AST) -> str:
    """A device variable visibly bound where ``node`` runs, else a device call."""
    fn = model.enclosing_function(node)
    var = model.device_variable
    if fn is not None:
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        for name in (var, "device", "dev", "xla_device"):
            if name is not None and name in params:
                return name
    return device_sites.device_ref_at(model, node) or xla_api.device(e, target)


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if not model.is_distributed:
        return
    for loop in model.training_loops:
        loader = iterated_loader(model, loop.node)
        source = classify(model, loader)
        if loader is None or source in (Source.XLA, Source.NONE):
            continue
        name = model.segment(loader)
        if source is Source.UNKNOWN and "loader" not in name.lower():
            continue
        e = Emitter(model)
        device = device_ref_at(model, e, ctx.target, loop.node)
        code = f"{e.pl}.MpDeviceLoader({name}, {device})"
        safe = source is Source.PLAIN
        message = (
            "distributed training loop iterates a plain DataLoader: wrap it in "
            "pl.MpDeviceLoader so batches reach the XLA device ahead of each step and "
            "every iteration ends in a sync"
        )
        reason = "" if safe else REVIEW_PARAMETER.format(name=name)
        yield Finding(
            CODE,
            message,
            model.span(loader),
            Severity.WARNING,
            fix=Fix(
                f"Wrap in {code}",
                (Replace(model.span(loader), code), *e.imports),
                safe=safe,
                review_reason=reason,
            ),
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
