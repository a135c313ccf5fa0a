"""XLA107: a training loop never marks the step.

XLA tensors are lazy: without a sync at the end of each iteration the graph keeps
growing across steps until something reads a value, so every step recompiles a bigger
graph (or memory runs out). ``MpDeviceLoader``/``ParallelLoader`` sync by themselves.

The sync goes where every iteration that ran a step passes (``sync_point``): at the end of the
body, or before the statement holding the first ``continue`` after a step (EDM's ``if not done:
continue`` ahead of a once-per-tick block skipped 9 of 10 syncs appended at the end, and each
graph spanned 10 steps).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import xla_api
from ..semantic.device_intent import finished_on_xla
from ..semantic.frameworks import ownership
from ..semantic.line_refs import line_ref
from ..semantic.loaders import Source, creates_xla_loader, loop_source, passed_in_loader
from ..semantic.loop_syncs import loop_syncs, sub_step_loop, synced_around, written_for_xla
from ..semantic.model import Emitter, ScriptModel, TrainingLoop
from ..semantic.prepared_loaders import prepared_feed
from ..semantic.workspace_loaders import from_workspace_xla_loader
from .base import (
    AppendToBody,
    Category,
    Finding,
    Fix,
    InsertBefore,
    Rule,
    RuleContext,
    Severity,
    Span,
    Target,
)
from .parts.closure_steps import closure_step_findings
from .parts.eval_loops import eval_loops, tensor_tests
from .parts.loopless_steps import loopless_step_findings
from .parts.sync_point import sync_point
from .parts.timer_sync import wait_syncs_loop
from .xla106_device_loader import will_wrap

CODE = "XLA107"


def _fed_by_xla_loader(model: ScriptModel, loop: TrainingLoop, target: Target) -> bool:
    """The loop's batches come from an XLA loader, which syncs every iteration. A loop that
    draws no data is synced by the code around it when it is a sub-step loop
    (``sub_step_loop``) or the script was written for XLA by hand (``written_for_xla``). A
    loop drawing from a source we cannot follow in a script that builds an XLA loader (or
    will: XLA106 wraps one of its loops) is taken to be fed by that loader. So is a loader
    handed in as a parameter from another module in a file written for XLA (the pytorch/xla
    examples pass their subclasses a pl.MpDeviceLoader from a base class in a sibling file).
    So is a loop that fetches a batch every iteration from a DataLoader that went through
    accelerate's ``prepare`` (``prepared_loaders``), directly or through a generator.

    Never evidence: what the other fixes write (``xm.optimizer_step``, which does not sync,
    ``torch_xla.device()``, a step closure, the imports). A finding that vanished when XLA105's
    fix was applied first would leave the converted loop without any sync."""
    source, expr = loop_source(model, loop)
    if source is Source.XLA:
        return True
    if prepared_feed(model, loop) is not None:
        # accelerate's prepare wrapped the loader in an MpDeviceLoader: each fetch syncs.
        return True
    if source is Source.UNKNOWN and passed_in_loader(model, expr):
        # The loader comes from code out of this file's reach (the pytorch/xla examples'
        # base class in a sibling module hands its subclass a pl.MpDeviceLoader). Trusted
        # only in a script on the XLA device with no CUDA left: a CUDA script's caller hands
        # in a plain DataLoader, and it still has its CUDA traces until XLA101 is applied.
        if written_for_xla(model) or finished_on_xla(model):
            return True
    if source is Source.UNKNOWN and from_workspace_xla_loader(model, expr) is not None:
        # So is a loader a function of another module hands out when that function builds an
        # XLA loader (for the XLA device: same trust as above).
        if written_for_xla(model) or finished_on_xla(model):
            return True
    if source is Source.NONE:
        return sub_step_loop(model, loop) or written_for_xla(model)
    return source is Source.UNKNOWN and (
        creates_xla_loader(model)
        or any(will_wrap(model, other.node, target) for other in model.training_loops)
    )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    if ownership(model).device_agnostic:
        # Lightning marks the steps: its set-up loaders are MpDeviceLoaders on XLA, and a
        # sync of our own would import torch_xla into a script that also runs on CUDA/CPU.
        return
    yield from _training_findings(model, ctx)
    yield from _eval_findings(model, ctx.target)
    yield from loopless_step_findings(model, ctx.target)
    yield from closure_step_findings(model, ctx.target)


def _training_findings(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    for loop in model.training_loops:
        if loop_syncs(model, loop) or wait_syncs_loop(model, loop):  # XLA403's timer wait
            continue
        if synced_around(model, loop):
            continue
        if _fed_by_xla_loader(model, loop, ctx.target) or will_wrap(model, loop.node, ctx.target):
            continue
        e = Emitter(model)
        code = xla_api.sync(e, ctx.target)
        node = loop.node
        # Report on the loop header only: the whole loop would paint the entire body.
        header_end = node.iter if isinstance(node, ast.For | ast.AsyncFor) else node.test
        span = model.span(node)
        span = Span(span.start, model.span(header_end).end)
        message = (
            f"training loop never marks the step: XLA keeps tracing one growing graph "
            f"across iterations; call {code} at the end of each iteration"
        )
        if not model.in_indented_block(node.body[0]):
            yield Finding(
                CODE,
                message,
                span,
                Severity.WARNING,
                manual=f"put the loop body on its own lines and end it with {code}",
            )
            continue
        point = sync_point(model, loop)
        where: AppendToBody | InsertBefore = (
            InsertBefore(model.span(point.before), code)
            if point.before is not None
            else AppendToBody(model.span(node), code)
        )
        if point.exit is not None and point.before is not None and not point.why_not:
            title = (
                f"Add {code} before line {line_ref(point.before.lineno)}, which every iteration reaches "
                f"(line {line_ref(point.exit.lineno)} may end the iteration)"
            )
        else:
            title = f"Add {code} at the end of the loop body" + (
                " (before its exit check)" if point.before is not None else ""
            )
        yield Finding(
            CODE,
            message + (f" (fix needs review: {point.why_not})" if point.why_not else ""),
            span,
            Severity.WARNING,
            fix=Fix(
                title,
                (where, *e.imports),
                safe=not point.why_not,
                review_reason=point.why_not,
            ),
        )


def _eval_findings(model: ScriptModel, target: Target) -> Iterator[Finding]:
    """Evaluation loops over a DataLoader that read nothing on the host per batch
    (``parts/eval_loops.py``): each batch's forward pass would join one graph that grows
    until a result is read after the loop. The sync goes at the end of the body; safe, a
    sync only materialises the pending tensors (the values are the same)."""
    for node in eval_loops(model):
        e = Emitter(model)
        code = xla_api.sync(e, target)
        span = model.span(node)
        span = Span(span.start, model.span(node.iter).end)
        tests = tensor_tests(model, node)
        if tests:
            message = (
                "evaluation loop never marks the step: its per-batch test of a tensor (line "
                f"{line_ref(tests[0].lineno)}) runs only the part of the graph that test needs, "
                "so XLA traces every batch's forward pass and the results it accumulates into "
                "one growing graph that runs only when a result is read after the loop; call "
                f"{code} at the end of each iteration"
            )
        else:
            message = (
                "evaluation loop never marks the step: nothing in it reads a result per batch, "
                "so XLA traces every batch's forward pass into one growing graph that runs only "
                f"when a result is read after the loop; call {code} at the end of each iteration"
            )
        if not model.in_indented_block(node.body[0]):
            manual = f"put the loop body on its own lines and end it with {code}"
            yield Finding(CODE, message, span, Severity.WARNING, manual=manual)
            continue
        fix = Fix(
            f"Add {code} at the end of the loop body",
            (AppendToBody(model.span(node), code), *e.imports),
        )
        yield Finding(CODE, message, span, Severity.WARNING, fix=fix)


HOVER_SYNC = """\
**XLA107 · mark the step at the end of each training iteration**

XLA records operations lazily and compiles/runs the graph at a sync. Without one per
iteration the graph grows across steps (recompiling every step) until a host read.

Fix: call the sync as the last statement of the loop body (not needed when the loop
iterates `pl.MpDeviceLoader`/`ParallelLoader`, which syncs for you).

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `torch_xla.sync()` (or `with torch_xla.step():`) |
| legacy (1.13) | `xm.mark_step()` (deprecated in 2.x) |

`xm.optimizer_step(opt)` does not sync unless `barrier=True`.
"""

RULE = Rule(
    code=CODE,
    name="mark-step",
    category=Category.CONVERSION,
    summary="Training loop without a step sync → xm.mark_step() / torch_xla.sync() at the end of each iteration",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch_xla.core.xla_model.mark_step": HOVER_SYNC,
        "torch_xla.sync": HOVER_SYNC,
        "torch_xla.step": HOVER_SYNC,
        "torch_xla.core.xla_model.optimizer_step": HOVER_SYNC,
    },
)
