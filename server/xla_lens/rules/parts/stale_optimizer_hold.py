"""Hold XLA101's device fixes while an optimizer is built before its model moves (XLA109).

pytorch-maml (held-out 115) builds ``torch.optim.Adam(benchmark.model.parameters())`` before
a sibling module moves the model to ``device``. On CUDA the move keeps the Parameters; on XLA
it makes new ones, so the optimizer steps stale CPU copies and the model never changes, with no
error (its repro: "weight changed: False"). As written, an XLA host has no CUDA: the picker
gives the CPU and the script trains there. Convert's safe picker fix made the device XLA while
XLA109 had no fix to apply, which turned a CPU run that trained into an XLA run that does not.
So while such an XLA109 error stands without a safe fix, every safe XLA101 fix of the file
waits for review and says why: reorder first, then convert the device.
"""

from __future__ import annotations

from dataclasses import replace

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ..base import Finding, RuleContext, Severity, Target

DEVICE_CODE = "XLA101"
STALE_CODE = "XLA109"


def _open_stale_builds(model: ScriptModel, target: Target) -> list[Finding]:
    from ..xla109_optimizer_before_move import check  # noqa: PLC0415 (the rule imports parts)

    def compute() -> list[Finding]:
        try:
            found = list(check(model, RuleContext(target)))
        except Exception:  # noqa: BLE001  its crash is reported by the engine
            return []
        return [
            f
            for f in found
            if f.severity == Severity.ERROR
            and (f.fix is None or not f.fix.safe)
            and not model.silenced(f.code, f.span.start.line, f.span.end.line)
        ]

    return model.memo(("stale_optimizer_hold", target), compute)


def hold_device_fixes(model: ScriptModel, findings: list[Finding], target: Target) -> list[Finding]:
    if not any(f.code == DEVICE_CODE and f.fix is not None and f.fix.safe for f in findings):
        return findings
    stale = _open_stale_builds(model, target)
    if not stale:
        return findings
    line = line_ref(stale[0].span.start.line + 1)
    reason = (
        f"the optimizer at line {line} is built before its model moves to the device (XLA109, "
        "no fix applied): on the XLA device it would step stale copies and the model would "
        "never train, with no error, where the script as written trains on the CPU; move the "
        "model before building the optimizer, then convert the device"
    )
    out = []
    for f in findings:
        if f.code == DEVICE_CODE and f.fix is not None and f.fix.safe:
            f = replace(f, fix=replace(f.fix, safe=False, review_reason=reason))
        out.append(f)
    return out


__all__ = ["hold_device_fixes"]
