"""XLA201: distributed AMP step without a gradient all-reduce.

With a GradScaler the optimizer step is ``scaler.step(opt)``, not ``xm.optimizer_step``,
so nothing averages the gradients across replicas: each one trains on its own shard and
the replicas drift apart. The guide (C.1) reduces them right after the backward pass.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import xla_api
from ..semantic.ddp_wrappers import Wrapping, ddp_named, model_wrappers
from ..semantic.frameworks import ownership
from ..semantic.model import Emitter, ScriptModel, TrainingLoop, dotted, method_name, receiver
from .base import Category, Finding, Fix, InsertAfter, Rule, RuleContext, Severity, Target

CODE = "XLA201"
REDUCERS = {
    "torch_xla.core.xla_model.all_reduce",
    "torch_xla.core.xla_model.reduce_gradients",
    "torch_xla.core.xla_model.optimizer_step",
}


def _is_scaler(model: ScriptModel, node: ast.AST | None) -> bool:
    if isinstance(node, ast.Name) and node.id in model.scaler_names:
        return True
    # self.scaler / amp_scaler: built somewhere we cannot follow.
    name = dotted(node) if node is not None else None
    return name is not None and "scaler" in name.split(".")[-1].lower()


def _scaled_backward(model: ScriptModel, call: ast.Call) -> ast.expr | None:
    """The scaler of ``scaler.scale(loss).backward()``."""
    if method_name(call) != "backward":
        return None
    inner = receiver(call)
    if isinstance(inner, ast.Call) and method_name(inner) == "scale":
        scaler = receiver(inner)
        if _is_scaler(model, scaler):
            return scaler
    return None


def _loop_calls(loop: TrainingLoop) -> Iterator[ast.Call]:
    for region in loop.regions():
        for node in ast.walk(region):
            if isinstance(node, ast.Call):
                yield node


def _optimizer_of(model: ScriptModel, loop: TrainingLoop, scaler: ast.expr) -> str | None:
    """The optimizer of ``scaler.step(opt)`` in the same loop."""
    want = dotted(scaler)
    for call in _loop_calls(loop):
        if (
            method_name(call) == "step"
            and dotted(receiver(call)) == want
            and len(call.args) == 1
            and not call.keywords
        ):
            return model.segment(call.args[0])
    return None


def _loop_modules(loop: TrainingLoop) -> set[str]:
    """What the loop calls by path (``model(x)``): the modules it runs, among others."""
    return {name for c in _loop_calls(loop) if (name := dotted(c.func)) is not None}


def _unseen_reason(wrap: Wrapping, line: int) -> str:
    if ddp_named(wrap.name.rpartition(".")[2]):
        what = f"`{wrap.name}()` (line {line}) looks like a DDP wrapper that xla-lens cannot see"
    else:
        what = f"`{wrap.target}` passes through `{wrap.name}()` (line {line}), which xla-lens cannot see"
    return (
        f"{what}: if it wraps the model in DDP, backward already averages the gradients and "
        "this would all-reduce them a second time every step"
    )


def _reduce_code(e: Emitter, target: Target, optimizer: str) -> str:
    if target == "legacy":
        return (
            f"gradients = {e.xm}._fetch_gradients({optimizer})\n"
            f'{e.xm}.all_reduce("sum", gradients, scale=1.0 / {xla_api.world_size(e, target)})\n'
        )
    return f"{e.xm}.reduce_gradients({optimizer})\n"


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    # DDP/FSDP reduce during backward; accelerate/Lightning own the step.
    if not model.is_distributed or ownership(model).step_owner is not None:
        return
    for call in model.method_calls("backward"):
        scaler = _scaled_backward(model, call)
        if scaler is None:
            continue
        loop = model.in_training_loop(call)
        if loop is None or any(model.call_name(c) in REDUCERS for c in _loop_calls(loop)):
            continue
        wrappers = model_wrappers(model, _loop_modules(loop))
        if any(w.kind == "reducing" for w in wrappers):
            continue  # ``model = smart_DDP(model)`` seen to wrap in DDP: reduced in backward
        unseen = next((w for w in wrappers if w.kind == "unseen"), None)
        stmt = model.enclosing_statement(call)
        optimizer = _optimizer_of(model, loop, scaler)
        message = (
            "distributed AMP step without a gradient all-reduce: scaler.step() does not "
            "average gradients across XLA replicas, so each replica trains on its own shard"
        )
        review = ""
        if unseen is not None:
            review = _unseen_reason(unseen, unseen.call.lineno)
            message += f" (unless `{unseen.name}()` already wraps the model in DDP)"
        if optimizer is None or stmt is None or not model.in_indented_block(stmt):
            yield Finding(
                CODE,
                message,
                model.span(call),
                Severity.WARNING,
                manual="after the backward pass call xm.reduce_gradients(optimizer) "
                "(legacy: xm.all_reduce('sum', xm._fetch_gradients(optimizer), "
                "scale=1.0 / xm.xrt_world_size()))",
            )
            continue
        e = Emitter(model)
        code = _reduce_code(e, ctx.target, optimizer)
        xm = e.xm
        first = (
            code.strip() if ctx.target == "modern" else f"{xm}._fetch_gradients + {xm}.all_reduce"
        )
        yield Finding(
            CODE,
            message,
            model.span(call),
            Severity.WARNING,
            fix=Fix(
                f"All-reduce the gradients after backward ({first})",
                (InsertAfter(model.span(stmt), code), *e.imports),
                safe=not review,
                review_reason=review,
            ),
        )


HOVER_REDUCE = """\
**XLA201 · all-reduce the gradients in a distributed AMP step**

`scaler.step(optimizer)` does not reduce gradients across XLA replicas (only
`xm.optimizer_step` does). Reduce them right after `scaler.scale(loss).backward()`.

| target | API |
|---|---|
| modern (torch_xla ≥ 2.5) | `xm.reduce_gradients(optimizer)` |
| legacy (1.13) | `gradients = xm._fetch_gradients(optimizer)`<br>`xm.all_reduce("sum", gradients, scale=1.0 / xm.xrt_world_size())` |

With bf16 autocast on modern torch_xla the GradScaler can go entirely (XLA103); then
`xm.optimizer_step(optimizer)` reduces the gradients itself.
"""

RULE = Rule(
    code=CODE,
    name="amp-all-reduce",
    category=Category.DISTRIBUTED,
    summary="Distributed AMP step (scaler.step) without a gradient all-reduce → xm.reduce_gradients / _fetch_gradients + all_reduce",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch_xla.core.xla_model.all_reduce": HOVER_REDUCE,
        "torch_xla.core.xla_model.reduce_gradients": HOVER_REDUCE,
        "torch_xla.core.xla_model._fetch_gradients": HOVER_REDUCE,
        ".scale": HOVER_REDUCE,
    },
)
