"""Does Convert leave the script's tensors on CUDA?

Some conversions are right only together with the device's: a CUDA autocast made ``"xla"``
over tensors that stay on CUDA switches the original's autocast off; a fused optimizer made
plain while its parameters stay on CUDA changes kernels for nothing. Such a fix is safe only
when every CUDA placement XLA101 reports is converted by a fix Convert applies (XLA101's
findings as the engine finally reports them: ``final_fixes``).
"""

from __future__ import annotations

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ..base import Target
from ..xla101_cuda_device import check as device_check
from .final_fixes import final_findings

DEVICE_RULE = "XLA101"


def device_held(model: ScriptModel, target: Target) -> str | None:
    """Why the script's tensors may stay on CUDA after Convert (None when every CUDA
    placement XLA101 reports is converted by a fix Convert applies)."""

    def compute() -> str | None:
        for f in final_findings(model, DEVICE_RULE, device_check, target):
            if f.fix is None or not f.fix.safe:
                return (
                    f"the script's tensors reach the XLA device only through XLA101's change at "
                    f"line {line_ref(f.span.start.line + 1)}, which is not applied automatically"
                )
        return None

    return model.memo(("device held", target), compute)
