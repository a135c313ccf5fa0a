"""Hold XLA403's removal of CUDA settings and seeds while the script's device stays CUDA.

ssl_methods (held-out 135): every device choice of the script waits for review (XLA101), while
``torch.backends.cudnn.deterministic = True`` and ``torch.cuda.manual_seed(seed)`` were removed
or rewritten by safe fixes. After Convert that script still trains on CUDA on a GPU host, now
with nondeterministic cuDNN kernels (or an unseeded CUDA generator, where no
``torch.manual_seed`` of the same seed came first): a changed program, though nothing reached XLA. These
settings are inert only once the device is the XLA device, so while any XLA101 device finding
of the file is left for review (or by hand), their fixes wait with it and say why.
"""

from __future__ import annotations

from dataclasses import replace

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ..base import Finding, Severity

DEVICE_CODE = "XLA101"
SETTING_CODE = "XLA403"
# How XLA403 words the findings whose fix is only inert on an XLA device.
SEED_MARK = "() seeds CUDA only"
CUDA_ACTING = ("configures cuDNN/CUDA kernels", SEED_MARK)


def _device_left(findings: list[Finding]) -> Finding | None:
    """A device choice whose fix waits for review (a finding with no fix, such as a CUDA
    availability flag, is advice about code that may still move: not counted)."""
    return next(
        (
            f
            for f in findings
            if f.code == DEVICE_CODE
            and f.severity <= Severity.WARNING
            and f.fix is not None
            and not f.fix.safe
        ),
        None,
    )


def _seeded_by_torch_first(model: ScriptModel, f: Finding) -> bool:
    """``torch.manual_seed(s)`` earlier in the same function seeds every CUDA device with
    ``s`` already: rewriting the CUDA seed of ``s`` changes nothing on CUDA."""
    call = next((c for c in model.calls if model.span(c) == f.span), None)
    if call is None or len(call.args) != 1:
        return False
    scope = model.enclosing_function(call)
    seed = model.segment(call.args[0])
    return any(
        model.enclosing_function(first) is scope
        and first.lineno < call.lineno
        and len(first.args) == 1
        and model.segment(first.args[0]) == seed
        for first in model.calls_to("torch.manual_seed")
    )


def hold_cuda_settings(model: ScriptModel, findings: list[Finding]) -> list[Finding]:
    held = [
        f
        for f in findings
        if f.code == SETTING_CODE
        and f.fix is not None
        and f.fix.safe
        and any(marker in f.message for marker in CUDA_ACTING)
        and not (SEED_MARK in f.message and _seeded_by_torch_first(model, f))
    ]
    if not held:
        return findings
    device = _device_left(findings)
    if device is None:
        return findings
    line = line_ref(device.span.start.line + 1)
    reason = (
        f"the device choice on line {line} waits for review (XLA101): until it is applied the "
        "script still runs on CUDA, where this setting or seed still acts; apply them together"
    )
    ids = {id(f) for f in held}
    return [
        replace(f, fix=replace(f.fix, safe=False, review_reason=reason))
        if id(f) in ids and f.fix is not None
        else f
        for f in findings
    ]


__all__ = ["hold_cuda_settings"]
