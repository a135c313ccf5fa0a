"""timm's loss scalers (XLA103): ``NativeScaler()`` wraps a CUDA ``GradScaler`` and runs the
whole update (``loss_scaler(loss, optimizer, clip_grad=..., parameters=...)``: scaled backward,
unscale, clip, step, update).

Where torch_xla is installed its CUDA GradScaler stays on and scales the XLA tensors too
(``torch.cuda.amp.GradScaler().is_enabled()`` is True there, measured on torch 2.9: torch checks
for CUDA *or* an installed torch_xla), reading the host every step for its inf check; with bf16
autocast the scaling is not needed. The call is timm's own, so there is nothing to rewrite in
place: advice, no fix (write the plain update instead). ``ApexScaler`` needs NVIDIA apex, which has no XLA
build.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...semantic.model import ScriptModel
from ...semantic.step_calls import LOSS_SCALER_CLASSES
from ..base import Finding, Severity

TIMM_SCALERS = LOSS_SCALER_CLASSES


def timm_scaler_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    for call in model.calls:
        name = model.call_name(call) or ""
        if name.split(".")[0] != "timm" or name.rsplit(".", 1)[-1] not in TIMM_SCALERS:
            continue
        shown = name.rsplit(".", 1)[-1]
        if shown == "ApexScaler":
            message = "timm's ApexScaler needs NVIDIA apex amp, which does not run on XLA"
        else:
            message = (
                f"timm's {shown} wraps a CUDA GradScaler: on XLA it still scales (it stays on "
                "where torch_xla is installed, measured) and reads the host every step, for "
                "loss scaling that bf16 autocast does not need"
            )
        yield Finding(
            code,
            message,
            model.span(call),
            Severity.INFORMATION if shown != "ApexScaler" else Severity.WARNING,
            manual=(
                "Use bf16 autocast on XLA and replace each `loss_scaler(loss, optimizer, "
                "clip_grad=..., parameters=...)` with `loss.backward()`, "
                "`torch.nn.utils.clip_grad_norm_(parameters, clip_grad)` when clipping, and "
                "`optimizer.step()` (xm.optimizer_step with several replicas and no DDP); drop "
                "the scaler's state_dict from checkpoints."
            ),
        )
