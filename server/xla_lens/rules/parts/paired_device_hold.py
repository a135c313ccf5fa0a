"""Hold XLA112's on-device allocation where the same site's move (XLA101) waits for review.

robust_overfitting (held-out 137): ``max_loss = torch.zeros(y.shape[0]).cuda()`` has two
findings: XLA101 (``.cuda()`` names CUDA) and XLA112 (built on the CPU, then copied: allocate
on the device). While an ``nn.DataParallel`` stays, every XLA101 fix of the file waits for
review, and the script keeps running on CUDA; XLA112's safe fix alone wrote ``device=
torch_xla.device()`` there, so that one tensor went to XLA and the first step mixing it with
the CUDA ones failed ("Expected XLA tensor"). Its fix places the tensor on the XLA device
exactly as the move's does, so it is exactly as safe: it waits with it.
"""

from __future__ import annotations

from dataclasses import replace

from ...semantic.line_refs import line_ref
from ..base import Finding

DEVICE_CODE = "XLA101"
ALLOCATION_CODE = "XLA112"


def hold_paired_allocations(findings: list[Finding]) -> list[Finding]:
    held = [f for f in findings if f.code == DEVICE_CODE and f.fix is not None and not f.fix.safe]
    if not held:
        return findings
    out = []
    for f in findings:
        if f.code == ALLOCATION_CODE and f.fix is not None and f.fix.safe:
            move = next((h for h in held if _overlap(f, h)), None)
            if move is not None:
                reason = (
                    f"it places this tensor on the XLA device as the move on line "
                    f"{line_ref(move.span.start.line + 1)} does (XLA101), whose fix waits for "
                    f"review ({move.fix.review_reason}); applied alone, this one tensor would "
                    "reach XLA while the others stay where they were"
                )
                f = replace(f, fix=replace(f.fix, safe=False, review_reason=reason))
        out.append(f)
    return out


def _overlap(a: Finding, b: Finding) -> bool:
    return a.span.start <= b.span.end and b.span.start <= a.span.end


__all__ = ["hold_paired_allocations"]
