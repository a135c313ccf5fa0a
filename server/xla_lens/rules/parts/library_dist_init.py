"""XLA205: library helpers that build the process group themselves (timm's
``init_distributed_device``, mmcv/mmengine's ``init_dist``, DeepSpeed's ``init_distributed``).

They read torchrun's environment variables and pick NCCL for CUDA: under
torch_xla's launcher none of those variables is set, so the helper leaves the run
undistributed and every replica trains alone; under torchrun the group it builds is not the
"xla" backend that DDP over XLA tensors needs (held-out 32, efficientdet's train.py). The
call is reported with no fix: what replaces it (and which of the helper's side effects the
script reads later) is the script author's to decide.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...semantic.model import ScriptModel
from ..base import Finding, Severity

TIMM = (
    "reads torchrun's WORLD_SIZE/RANK/LOCAL_RANK, builds the process group with the backend "
    "its device table gives (NCCL for CUDA; it has no entry for XLA), calls "
    "torch.cuda.set_device and sets args.distributed, world_size, rank and device from them"
)
MM = (
    "builds the process group from torchrun's or slurm's environment with NCCL by default "
    "and calls torch.cuda.set_device"
)
DEEPSPEED = "builds the process group from the launcher's environment with NCCL by default"
HELPERS = {
    "timm.utils.init_distributed_device": TIMM,
    "timm.utils.distributed.init_distributed_device": TIMM,
    "mmcv.runner.init_dist": MM,
    "mmcv.runner.dist_utils.init_dist": MM,
    "mmengine.dist.init_dist": MM,
    "mmengine.dist.utils.init_dist": MM,
    "deepspeed.init_distributed": DEEPSPEED,
    "deepspeed.comm.init_distributed": DEEPSPEED,
}
MANUAL = (
    "Build the group yourself where the helper is called: "
    '`dist.init_process_group("xla", init_method="xla://")` (after `import '
    "torch_xla.distributed.xla_backend`), then set what the script reads from the helper "
    "from the XLA runtime: `xr.world_size() > 1` for distributed, `xr.world_size()`, "
    "`xr.global_ordinal()` and `torch_xla.device()`."
)


def library_init_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    for call in model.calls:
        name = model.call_name(call)
        what = HELPERS.get(name or "")
        if what is None:
            continue
        yield Finding(
            code,
            f"{model.segment(call.func)}() {what}: under torch_xla's launcher none of those "
            "variables is set, so the run is not distributed (every replica trains alone), and "
            'under torchrun its group is not the "xla" backend DDP over XLA tensors needs',
            model.span(call),
            Severity.WARNING,
            manual=MANUAL,
        )
