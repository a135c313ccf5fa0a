"""Hold XLA101's device fixes while an ``nn.DataParallel`` wrap stays (XLA110 without a safe fix).

Glow (held-out 121): ``model = nn.DataParallel(model_single)`` then ``model.to(device)`` with a
``cuda``-or-``cpu`` picker. Convert's safe picker fix made the device XLA and left the wrap, whose
removal waits for review. The torch wheel torch_xla 2.9 runs with is a CUDA build: on a host where
it sees a GPU — the machine "Run on GPU (XLA)" uses — ``DataParallel`` takes every GPU as its
devices and its forward raises ``module must have its parameters and buffers on device cuda:0
(device_ids[0]) but found one of them on device: xla:0`` (torch's own check), where the script as
written trained on the GPU. On a TPU or CPU host the wrap passes the call through. So while such a
wrap stands, every safe XLA101 fix of the file waits for review and says why: unwrap, then
convert the device.
"""

from __future__ import annotations

from dataclasses import replace

from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ...semantic.placement_guards import under_several_devices
from ..base import Finding, RuleContext, Target
from .framework_device import leave_framework_device
from .scripted_code import leave_scripted_code
from .xla_branch_filter import leave_non_xla_code

DEVICE_CODE = "XLA101"
WRAP_CODE = "XLA110"
WRAP_MESSAGE = "nn.DataParallel only knows CUDA devices"


def _open_wraps(model: ScriptModel, target: Target) -> list[Finding]:
    from ..xla110_data_parallel import check  # noqa: PLC0415 (the rule imports parts)

    def compute() -> list[Finding]:
        try:
            found = list(check(model, RuleContext(target)))
        except Exception:  # noqa: BLE001  its crash is reported by the engine
            return []
        # The same filters the engine applies: a wrap on the CUDA side of the script's own
        # device switch, or under an option it switches off, is not one a converted run meets.
        kept = leave_scripted_code(
            model, leave_framework_device(model, leave_non_xla_code(model, found))
        )
        return [
            f
            for f in kept
            if f.message.startswith(WRAP_MESSAGE)
            and (f.fix is None or not f.fix.safe)
            and not model.silenced(f.code, f.span.start.line, f.span.end.line)
            and not _several_gpus_only(model, f)
        ]

    return model.memo(("data_parallel_hold", target), compute)


def _several_gpus_only(model: ScriptModel, wrap: Finding) -> bool:
    """The wrap sits under ``if torch.cuda.device_count() > 1:``: a one-GPU host skips it as
    the original did, an XLA host (no CUDA) too."""
    line = wrap.span.start.line + 1
    return any(under_several_devices(model, call) for call in model.calls if call.lineno == line)


def hold_for_data_parallel(
    model: ScriptModel, findings: list[Finding], target: Target
) -> list[Finding]:
    if not any(f.code == DEVICE_CODE and f.fix is not None and f.fix.safe for f in findings):
        return findings
    wraps = _open_wraps(model, target)
    if not wraps:
        return findings
    line = line_ref(wraps[0].span.start.line + 1)
    reason = (
        f"nn.DataParallel (line {line}) stays until its own fix is reviewed (XLA110): where torch "
        "sees a CUDA GPU it scatters onto cuda:0 and fails on a model on the XLA device ('module "
        "must have its parameters and buffers on device cuda:0'), where the script as written "
        "trains on the GPU; unwrap the model first, then convert the device"
    )
    out = []
    for f in findings:
        if f.code == DEVICE_CODE and f.fix is not None and f.fix.safe:
            f = replace(f, fix=replace(f.fix, safe=False, review_reason=reason))
        out.append(f)
    return out


__all__ = ["hold_for_data_parallel"]
