"""apex's older manual fp16 training (XLA103): ``model = network_to_half(model)`` and
``optimizer = FP16_Optimizer(optimizer, static_loss_scale=..., dynamic_loss_scale=...)``,
then ``optimizer.backward(loss)`` — ``apex.fp16_utils``, or the copy many pose-estimation
repos vendor as ``fp16_utils`` (HigherHRNet's ``lib/fp16_utils``, held-out 83).

FP16_Optimizer accepts only ``torch.cuda.HalfTensor`` / ``torch.cuda.FloatTensor`` parameters
and raises TypeError for any other (its constructor checks ``param.type()``), so on the XLA
device it stops the script before the first step. The XLA way is the plain optimizer with the
forward pass under bf16 autocast (no master copy, no loss scaling): the model stays fp32. That
touches the model's dtype, the optimizer and the backward call at once, often across files:
advice, no fix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel, method_name
from ..base import Finding, Severity

FP16_UTILS = frozenset({"FP16_Optimizer", "network_to_half", "FP16_Module"})


def _is_fp16_utils(qualname: str) -> bool:
    module, _, name = qualname.rpartition(".")
    return name in FP16_UTILS and ("fp16_util" in module or module.startswith("apex"))


def apex_fp16_utils_findings(model: ScriptModel, code: str, autocast: str) -> Iterator[Finding]:
    if "fp16" not in model.source.lower():
        return
    backwards = sorted(
        {c.lineno for c in model.method_calls("backward") if c.args and _optimizer_receiver(c)}
    )
    wrapped_at: list[int] = []
    for call in model.calls:
        qualname = model.call_name(call) or ""
        if not _is_fp16_utils(qualname):
            continue
        name = qualname.rpartition(".")[2]
        if name == "FP16_Optimizer":
            wrapped_at.append(call.lineno)
            message = (
                "apex's FP16_Optimizer (fp16_utils) is CUDA-only: it accepts only "
                "torch.cuda.HalfTensor/FloatTensor parameters and raises TypeError on the XLA "
                f"model's; on XLA keep the plain optimizer and use {autocast} around the "
                "forward pass (bf16 needs no loss scaling)"
            )
        else:
            message = (
                f"{name}() casts the model to float16 for apex's manual fp16 training (with "
                "FP16_Optimizer's fp32 master weights, which do not run on XLA): on XLA keep the "
                f"model in fp32 and use {autocast} around the forward pass"
            )
        manual = f"drop {name}(...) and keep what it wraps; run the forward pass under {autocast}"
        if backwards:
            lines = ", ".join(line_ref(n) for n in backwards)
            manual += f"; `optimizer.backward(loss)` (line {lines}) becomes `loss.backward()`"
        else:
            manual += (
                "; where the training step calls `optimizer.backward(loss)` (often in another "
                "file), call `loss.backward()` instead"
            )
        yield Finding(code, message, model.span(call), Severity.WARNING, manual=manual)
    if not wrapped_at:
        return
    # Each backward through FP16_Optimizer is a site to change too (DialoGPT, held-out 122:
    # only the constructor's advice named it, so the site was easy to leave behind).
    built = ", ".join(line_ref(n) for n in wrapped_at)
    for call in model.method_calls("backward"):
        if call.args and _optimizer_receiver(call):
            yield Finding(
                code,
                f"`{model.segment(call)}` is FP16_Optimizer's backward (line {built}): it "
                "scales the loss for fp16 and fills the fp32 master gradients, which do not run "
                "on XLA",
                model.span(call),
                Severity.WARNING,
                manual="once FP16_Optimizer is dropped, call `loss.backward()` here (bf16 "
                "autocast needs no loss scaling)",
            )


def _optimizer_receiver(call: ast.Call) -> bool:
    recv = call.func.value if isinstance(call.func, ast.Attribute) else None
    return method_name(call) == "backward" and isinstance(recv, ast.Name) and "opt" in recv.id


__all__ = ["apex_fp16_utils_findings"]
