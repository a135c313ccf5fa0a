"""XLA203: DistributedSampler without the XLA replica count and ordinal.

Without ``num_replicas``/``rank`` the sampler asks ``torch.distributed``: the XLA launcher
creates no process group, so it raises; a group the script builds itself (on the "xla"
backend after conversion) answers with the size it was given, which code may rely on.
A DataLoader given both a sampler and ``shuffle=True`` raises too.

Quiet on a sampler of an XLA script started by torchrun whose xla process group is built
before it (semantic/xla_process_group.py): each process is one replica and the group numbers
them. Under the XLA launcher the replicas may be threads of one process sharing the default
group (TPU v2/v3, PJRT CPU), so there the finding stays and says so.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from ..semantic import xla_api
from ..semantic.device_intent import being_converted
from ..semantic.line_refs import line_ref
from ..semantic.model import Emitter, ScriptModel, arg_or_keyword, keyword
from ..semantic.torchrun_env import runs_under_torchrun_on_xla
from ..semantic.xla_process_group import (
    makes_xla_group,
    torchrun_group_exists_before,
    xla_group_exists_before,
)
from .base import Category, EditOp, Finding, Fix, Replace, Rule, RuleContext, SetKeyword, Severity
from .parts.foreign_launcher import foreign_launcher, launcher_reason

CODE = "XLA203"
SAMPLERS = {
    "torch.utils.data.DistributedSampler",
    "torch.utils.data.distributed.DistributedSampler",
}
GROUP_TEST = "torch.distributed.is_initialized"
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


GROUP_INIT = "torch.distributed.init_process_group"
WORLD_SIZE_WORDS = re.compile(r"world_size|num_replicas|nprocs", re.IGNORECASE)


def _group_world_size(model: ScriptModel) -> tuple[ast.Call, ast.AST | None] | None:
    """The script's ``init_process_group`` call and the ``world_size`` it passes (None when
    it leaves the size to the rendezvous); None without a process group."""
    for call in model.calls_to(GROUP_INIT):
        return call, arg_or_keyword(call, 3, "world_size")
    return None


def _sampler_length_times_world_size(model: ScriptModel) -> ast.BinOp | None:
    """``len(val_loader.sampler) * args.world_size`` (imagenet): code that takes the sampler's
    replica count to be the script's own world-size value."""
    for node in model.nodes_of(ast.BinOp):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
            continue
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if (
                isinstance(a, ast.Call)
                and isinstance(a.func, ast.Name)
                and a.func.id == "len"
                and a.args
                and "sampler" in model.segment(a.args[0]).lower()
                and WORLD_SIZE_WORDS.search(model.segment(b))
            ):
                return node
    return None


def _sibling_group(model: ScriptModel) -> str | None:
    """``setup()`` of a sibling module that builds the process group (held-out 9, LoRA's
    gpu.py): where, as the message says it; None when no call of this file reaches one."""
    for call in model.calls:
        facts = model.steps.external(call)
        if facts is not None and facts.group_line:
            return f"that {facts.name}() builds ({Path(facts.module).name}:{facts.group_line})"
    return None


def _message_and_review(model: ScriptModel, missing: list[str]) -> tuple[str, str]:
    """What the sampler would do unfixed, and why the fix needs review ("" when it does not)."""
    lacks = f"DistributedSampler without {' and '.join(missing)}"
    group = _group_world_size(model)
    built = _sibling_group(model) if group is None else None
    if built is not None:
        message = (
            f"{lacks}: it takes them from the process group {built}, which runs on the "
            '"xla" backend after conversion; pass the XLA world size and ordinal so each '
            "replica reads its own shard as the XLA runtime numbers them"
        )
        return message, ""
    if group is None:
        # The group may be built in another module (mingpt's trainer): say only what is sure.
        message = (
            f"{lacks}: it asks torch.distributed, which needs a process group, and the XLA "
            "launcher does not create one; pass the XLA world size and ordinal"
        )
        return message, ""
    call, size = group
    message = (
        f"{lacks}: it takes them from the process group (line {line_ref(call.lineno)}), which runs on the "
        '"xla" backend after conversion; pass the XLA world size and ordinal so each replica '
        "reads its own shard as the XLA runtime numbers them"
    )
    if size is None or "num_replicas" not in missing:
        return message, ""
    # The group is told its size: with the fix the sampler's count comes from the runtime
    # instead, and code that pairs the sampler with the script's value relies on both agreeing.
    moved = (
        f"num_replicas then comes from the XLA runtime, not from the process group's "
        f"world_size={model.segment(size)} (line {line_ref(call.lineno)})"
    )
    product = _sampler_length_times_world_size(model)
    if product is None:
        return f"{message}; {moved}", ""
    reason = (
        f"{moved}, and line {line_ref(product.lineno)} computes {model.segment(product)[:60]}: that "
        f"holds only if {model.segment(size)} equals the XLA world size"
    )
    return message, reason


ADVICE = "pass the XLA world size and ordinal"
XLA_LAUNCHERS = ("torch_xla.launch", "torch_xla.distributed.xla_multiprocessing.spawn")
THREADED_REPLICAS = (
    "{lacks}: it takes them from the xla:// process group (line {line}), which numbers "
    "the replicas as the XLA runtime does only when each replica is a process of its own; "
    "where the runtime runs several replicas as threads of one process (TPU v2/v3, PJRT CPU "
    "with CPU_NUM_DEVICES > 1) they share torch.distributed's default group and read the "
    "same rank, so they read the same shard; pass the XLA world size and ordinal, which are "
    "per replica"
)


def _guarded_message(
    model: ScriptModel, call: ast.Call, missing: list[str]
) -> tuple[str, str] | None:
    """``if dist.is_available() and dist.is_initialized(): sampler = DistributedSampler(ds)``
    (held-out 22 r2, hysts' dataloader.py): the sampler exists only when a process group does,
    so "the launcher creates no group" would be wrong; it takes its replicas from that group.
    Without one the other branch runs (whether one is built on XLA: XLA204, XLA205)."""
    child: ast.AST = call
    for node in model.ancestors(call):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return None
        if isinstance(node, ast.If) and any(child is s for s in node.body):
            tests = node.test.values if _is_and(node.test) else [node.test]
            if any(isinstance(t, ast.Call) and model.call_name(t) == GROUP_TEST for t in tests):
                lacks = f"DistributedSampler without {' and '.join(missing)}"
                message = (
                    f"{lacks}: it is built only when a process group exists (`"
                    f"{model.segment(node.test)}`, line {line_ref(node.lineno)}) and takes them "
                    'from that group, which runs on the "xla" backend after conversion; pass '
                    "the XLA world size and ordinal so each replica reads its own shard as the "
                    "XLA runtime numbers them (replicas run as threads of one process share the "
                    "default group's rank)"
                )
                return message, ""
        child = node
    return None


def _is_and(test: ast.expr) -> bool:
    return isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)


def _xla_script(model: ScriptModel) -> bool:
    return model.uses_torch_xla and not being_converted(model)


def _torchrun_group_answers(model: ScriptModel, call: ast.Call) -> bool:
    """An XLA script started by torchrun (no XLA launcher) whose xla process group is built
    before the sampler: each process is one replica and the group numbers them, so the
    sampler's defaults shard as the script's DDP all-reduces (and with xla:// they are the XLA
    runtime's very values)."""
    if not _xla_script(model) or not runs_under_torchrun_on_xla(model):
        return False
    return xla_group_exists_before(model, call, launched=False)


def _torchrun_started_group(model: ScriptModel, call: ast.Call, ctx: RuleContext) -> bool:
    """A script torchrun starts (no launcher of its own, none a safe fix adds) whose process
    group, built before this sampler by torchrun's ``env://`` rendezvous, numbers the
    processes: converted, that group runs on the "xla" backend (XLA205) with the same numbers,
    and the sampler's defaults shard as they did (held-out 47's XMem). The runtime's values
    would be wrong there on the PJRT CPU device (world size 1 per torchrun process, measured)
    and the same at best elsewhere: nothing to change."""
    if _xla_script(model):
        return False  # written for XLA: _torchrun_group_answers decides
    launcher = foreign_launcher(model, ctx.target)
    return launcher is not None and launcher.torchrun and torchrun_group_exists_before(model, call)


def _xla_script_message(
    model: ScriptModel, call: ast.Call, missing: list[str]
) -> tuple[str, str] | None:
    """The message for an XLA script that builds an xla process group (None otherwise): the
    group is built after this sampler runs, or the launcher's threads share it."""
    if not _xla_script(model):
        return None
    launched = any(True for _ in model.calls_to(*XLA_LAUNCHERS))
    init = next(
        (c for c in model.calls_to(GROUP_INIT) if makes_xla_group(model, c, launched)), None
    )
    if init is None:
        return None
    lacks = f"DistributedSampler without {' and '.join(missing)}"
    if xla_group_exists_before(model, call, launched):
        if not launched:
            return None  # another launcher (torch.multiprocessing.spawn): the usual message
        return THREADED_REPLICAS.format(lacks=lacks, line=line_ref(init.lineno)), ""
    message = (
        f"{lacks}: it asks torch.distributed, whose xla process group (line {line_ref(init.lineno)}) "
        'is not built yet where this sampler is ("Default process group has not been '
        'initialized"); pass the XLA world size and ordinal'
    )
    return message, ""


def _sampler_findings(model: ScriptModel, call: ast.Call, ctx: RuleContext) -> Iterator[Finding]:
    if _opaque(call):
        return
    missing = [
        name
        for i, name in ((1, "num_replicas"), (2, "rank"))
        if arg_or_keyword(call, i, name) is None
    ]
    if not missing:
        yield from _runtime_ranks_under_spawn(model, call, ctx)
        return
    if _torchrun_group_answers(model, call) or _torchrun_started_group(model, call, ctx):
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
    message, reason = (
        _xla_script_message(model, call, missing)
        or _guarded_message(model, call, missing)
        or _message_and_review(model, missing)
    )
    # The runtime numbers the processes only when torch_xla's launcher started them.
    launcher = launcher_reason(model, call, ctx.target)
    if launcher:
        # Under another launcher the runtime's values are wrong until torch_xla's starts the
        # processes: the advice says so instead of contradicting the review reason.
        message = message.replace(
            ADVICE, f"once torch_xla's launcher starts the processes (XLA204), {ADVICE}", 1
        )
    reason = f"{reason}; also {launcher}" if reason and launcher else reason or launcher
    if reason:
        message = f"{message} (fix needs review: {reason})"
    yield Finding(
        CODE,
        message,
        span,
        Severity.WARNING,
        fix=Fix(
            "Pass " + ", ".join(f"{n}={values[n]}" for n in missing),
            (*ops, *e.imports),
            safe=not reason,
            review_reason=reason,
        ),
    )


RUNTIME_RANKS = {
    "torch_xla.runtime.world_size",
    "torch_xla.runtime.global_ordinal",
    "torch_xla.core.xla_model.xrt_world_size",
    "torch_xla.core.xla_model.get_ordinal",
}


def _runtime_ranks_under_spawn(
    model: ScriptModel, call: ast.Call, ctx: RuleContext
) -> Iterator[Finding]:
    """A sampler given the runtime's world size or ordinal (what the fix writes) in processes
    mp.spawn starts: the runtime numbers each 0 of 1 there, so `check` must not go quiet."""
    launcher = foreign_launcher(model, ctx.target)
    if launcher is None or launcher.torchrun:
        return  # torchrun: right once an xla:// group is built (XLA202/XLA205's business)
    given = [arg_or_keyword(call, i, name) for i, name in ((1, "num_replicas"), (2, "rank"))]
    runtime = [a for a in given if isinstance(a, ast.Call) and model.call_name(a) in RUNTIME_RANKS]
    if not runtime:
        return
    yield Finding(
        CODE,
        f"DistributedSampler given {' and '.join(model.segment(a) for a in runtime)} while the "
        f"processes are started by {launcher.name}, not by torch_xla's launcher: the XLA "
        "runtime gives every process ordinal 0 and world size 1, so each reads all the data "
        "(independent replicas)",
        model.span(call),
        Severity.WARNING,
        manual="start the processes with torch_xla.launch (XLA204), or pass the ranks this "
        "launcher gives (the spawn index and the process count)",
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
(the sampler's defaults ask `torch.distributed`, which the XLA launcher does not set up,
and replicas run as threads of one process share its default group; an XLA script started by
torchrun that builds its `xla` process group first needs nothing).
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
