"""XLA203: DistributedSampler without the XLA replica count and ordinal.

Without ``num_replicas``/``rank`` the sampler asks ``torch.distributed``, which the XLA
launcher has not initialised, so it raises (or, with a process group, may disagree with
the XLA runtime). A DataLoader given both a sampler and ``shuffle=True`` raises too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import xla_api
from ..semantic.model import Emitter, ScriptModel, arg_or_keyword, keyword
from .base import Category, EditOp, Finding, Fix, Replace, Rule, RuleContext, SetKeyword, Severity

CODE = "XLA203"
SAMPLERS = {
    "torch.utils.data.DistributedSampler",
    "torch.utils.data.distributed.DistributedSampler",
}
DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}


def _opaque(call: ast.Call) -> bool:
    """``*args``/``**kwargs`` may already carry the arguments we would add."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    )


def _is_sampler(model: ScriptModel, node: ast.AST | None) -> bool:
    if isinstance(node, ast.Call):
        return model.call_name(node) in SAMPLERS
    if isinstance(node, ast.Name):
        return any(
            isinstance(v, ast.Call) and model.call_name(v) in SAMPLERS
            for v in model.assigned_from(node.id)
        )
    return False


def _sampler_findings(model: ScriptModel, call: ast.Call, ctx: RuleContext) -> Iterator[Finding]:
    if _opaque(call):
        return
    missing = [
        name
        for i, name in ((1, "num_replicas"), (2, "rank"))
        if arg_or_keyword(call, i, name) is None
    ]
    if not missing:
        return
    e = Emitter(model)
    values = {
        "num_replicas": xla_api.world_size(e, ctx.target),
        "rank": xla_api.global_ordinal(e, ctx.target),
    }
    span = model.span(call)
    ops: list[EditOp] = [SetKeyword(span, name, values[name]) for name in missing]
    if arg_or_keyword(call, 3, "shuffle") is None:
        ops.append(SetKeyword(span, "shuffle", "True"))
    yield Finding(
        CODE,
        f"DistributedSampler without {' and '.join(missing)}: it would ask torch.distributed, "
        "which the XLA launcher does not initialise; pass the XLA world size and ordinal",
        span,
        Severity.WARNING,
        fix=Fix(
            "Pass " + ", ".join(f"{n}={values[n]}" for n in missing),
            (*ops, *e.imports),
        ),
    )


def _loader_findings(model: ScriptModel, call: ast.Call) -> Iterator[Finding]:
    if not _is_sampler(model, arg_or_keyword(call, 3, "sampler")):
        return
    kw = keyword(call, "shuffle")
    value = kw.value if kw is not None else (call.args[2] if len(call.args) > 2 else None)
    if not (isinstance(value, ast.Constant) and value.value is True):
        return
    op = (
        SetKeyword(model.span(call), "shuffle", "False")
        if kw
        else Replace(model.span(value), "False")
    )
    yield Finding(
        CODE,
        "DataLoader with a DistributedSampler and shuffle=True raises ValueError: the sampler "
        "shuffles; the loader needs shuffle=False",
        model.span(value),
        Severity.ERROR,
        fix=Fix("Set shuffle=False on the DataLoader", (op,)),
    )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.calls:
        name = model.call_name(call)
        if name in SAMPLERS:
            yield from _sampler_findings(model, call, ctx)
        elif name in DATALOADERS:
            yield from _loader_findings(model, call)


HOVER_SAMPLER = """\
**XLA203 · DistributedSampler on XLA replicas**

Each XLA replica must read its own shard: pass the XLA world size and ordinal explicitly
(the sampler's defaults ask `torch.distributed`, which the XLA launcher does not set up).
`pl.MpDeviceLoader` does not shard by itself.

| target | code |
|---|---|
| modern (torch_xla ≥ 2.5) | `DistributedSampler(ds, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)` |
| legacy (1.13) | `DistributedSampler(ds, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(), shuffle=True)` |

The `DataLoader(ds, sampler=sampler, shuffle=False)`: a sampler and `shuffle=True` together raise.
"""

RULE = Rule(
    code=CODE,
    name="distributed-sampler",
    category=Category.DISTRIBUTED,
    summary="DistributedSampler without num_replicas/rank → the XLA world size and ordinal; shuffle=False on its DataLoader",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch.utils.data.DistributedSampler": HOVER_SAMPLER,
        "torch.utils.data.distributed.DistributedSampler": HOVER_SAMPLER,
    },
)
