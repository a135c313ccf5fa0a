"""XLA205's FSDP findings: torch's FullyShardedDataParallel is not how XLA shards.

DDP over the ``xla`` backend is a supported PyTorch/XLA mode; torch's FSDP is not: wrapping an
XLA module raises (torch 2.9: "Device 'xla:0' does not have a corresponding backend registered
as 'torch.xla'", checked on CPU PJRT). On XLA the model is wrapped by
torch_xla's ``XlaFullyShardedDataParallel`` or sharded with SPMD (``SpmdFullyShardedDataParallel``,
FSDPv2). Reported where the script shows it:
- a ``FullyShardedDataParallel(...)`` wrap of torch's;
- the wrapped module's own ``model.clip_grad_norm_(max_norm)``: FSDP's method, often the only
  trace of FSDP in a training-loop module whose wrap lives in another file (llama-recipes).
  XlaFullyShardedDataParallel keeps the method; FSDPv2 has none, and clipping there is
  ``torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)``.
The method call counts only when the file imports torch's FSDP (``torch.distributed.fsdp``)
and not torch_xla's: ``accelerator.clip_grad_norm_(params, max_norm)`` and scripts already on
torch_xla's FSDP are left alone. No fix: the wrap, and which FSDP, is a design choice.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, dotted
from ..base import Finding, Severity

TORCH_FSDP_MODULE = "torch.distributed.fsdp"
XLA_FSDP_MODULES = (
    "torch_xla.distributed.fsdp",
    "torch_xla.experimental.spmd_fully_sharded_data_parallel",
    "torch_xla.distributed.spmd",
)
TORCH_FSDP_WRAPPERS = {
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
}
XLA_WAY = (
    "on XLA wrap the model with torch_xla's XlaFullyShardedDataParallel "
    "(torch_xla.distributed.fsdp) or shard it with SPMD (SpmdFullyShardedDataParallel, FSDPv2)"
)
WRAP_MESSAGE = (
    "torch's FullyShardedDataParallel fails on XLA tensors (torch has no 'torch.xla' device "
    f"backend for it): {XLA_WAY}"
)
WRAP_MANUAL = (
    "Wrap with torch_xla.distributed.fsdp.XlaFullyShardedDataParallel (its auto-wrap policies "
    "are in torch_xla.distributed.fsdp.wrap), or use SPMD FSDPv2; drop device_id, which names "
    "a CUDA device."
)
CLIP_MANUAL = (
    "Where the model is wrapped, use torch_xla's XlaFullyShardedDataParallel (this call then "
    "stays as it is), or SPMD FSDPv2 and clip with "
    "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)."
)
# Receivers whose clip_grad_norm_(parameters, max_norm) is not FSDP's.
NOT_FSDP_RECEIVERS = ("accelerator", "fabric", "trainer", "engine", "utils")


def fsdp_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    imports = model.imports.values()
    if any(t.startswith(XLA_FSDP_MODULES) for t in imports):
        return  # already on torch_xla's FSDP (or SPMD): its clip_grad_norm_ is right
    for call in model.calls_to(*TORCH_FSDP_WRAPPERS):
        yield Finding(
            code, WRAP_MESSAGE, model.span(call.func), Severity.WARNING, manual=WRAP_MANUAL
        )
    if not any(t.startswith(TORCH_FSDP_MODULE) for t in imports):
        return
    for call in model.method_calls("clip_grad_norm_"):
        if _is_module_clip(model, call):
            receiver = model.segment(call.func.value)  # type: ignore[attr-defined]
            yield Finding(
                code,
                f"`{receiver}.clip_grad_norm_(...)` is torch FSDP's method, and torch's FSDP "
                f"fails on XLA tensors: {XLA_WAY}. XlaFullyShardedDataParallel has the same "
                "method; FSDPv2 has none",
                model.span(call),
                Severity.WARNING,
                manual=CLIP_MANUAL,
            )


def _is_module_clip(model: ScriptModel, call: ast.Call) -> bool:
    """``model.clip_grad_norm_(max_norm[, norm_type])`` on a module: not
    ``torch.nn.utils.clip_grad_norm_(params, ...)`` nor ``accelerator.clip_grad_norm_(params,
    ...)``, whose first argument is the parameters."""
    func = call.func
    if not isinstance(func, ast.Attribute) or model.qualname(func) is not None:
        return False
    receiver = (dotted(func.value) or "").lower()
    if not receiver or any(word in receiver for word in NOT_FSDP_RECEIVERS):
        return False
    first = (
        call.args[0]
        if call.args
        else next((k.value for k in call.keywords if k.arg == "max_norm"), None)
    )
    if first is None or any(isinstance(a, ast.Starred) for a in call.args):
        return False
    return not _is_parameters(first)


def _is_parameters(node: ast.expr) -> bool:
    """``model.parameters()``, ``params``, ``[p for p in ...]``: what util clippers take."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return "param" in node.func.attr
    if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.List | ast.Tuple):
        return True
    name = dotted(node) or ""
    return "param" in name.rsplit(".", 1)[-1].lower()
