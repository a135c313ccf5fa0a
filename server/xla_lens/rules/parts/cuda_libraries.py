"""XLA405's CUDA-only libraries: an import of apex, bitsandbytes, xformers, flash-attn,
pynvml, CuPy or Triton, once per library (and DGL, which runs on the CPU or CUDA but has no XLA
device), and each kernel fetched from the Hugging Face hub
(``kernels.get_kernel``), with what to use on XLA instead. apex imported only for
LARC (held-out 15, SwAV) is told apart: LARC is plain PyTorch with no torch.optim
equivalent, so "replace apex" would change the optimizer."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel
from ..base import Finding, Severity

LIBRARY_MANUAL = {
    "apex": 'Replace apex with torch.autocast("xla", dtype=torch.bfloat16), torch.optim or '
    "torch_xla.amp.syncfree optimizers, and DDP over the xla backend.",
    "bitsandbytes": "Drop bitsandbytes: train with bf16 weights and torch.optim or syncfree "
    "optimizers.",
    "xformers": "Call torch.nn.functional.scaled_dot_product_attention instead of the "
    "xformers kernels.",
    "flash_attn": "Call torch.nn.functional.scaled_dot_product_attention (or torch_xla's "
    "flash_attention on TPU) instead of flash-attn.",
    "pynvml": "Read device memory with xm.get_memory_info(device) instead of NVML.",
    "cupy": "Keep the data in torch tensors on the XLA device instead of CuPy arrays.",
    "amp_C": "Compute the multi-tensor updates with torch's _foreach ops (torch._foreach_mul_, "
    "torch._foreach_add_, torch._foreach_norm), which XLA lowers, and drop the import.",
    "warpctc_pytorch": "Use torch.nn.CTCLoss (log-softmaxed (T, N, C) inputs, blank index 0 by "
    "default), which XLA lowers.",
    "triton": "Replace each Triton kernel with the PyTorch ops it computes (XLA fuses them), or "
    "with a Pallas kernel on TPU.",
    "dgl": "Keep the DGL model on the CPU, or write its graph layers with plain torch ops over "
    "edge index tensors (index_add_ / scatter_reduce, as PyTorch Geometric's pure-torch paths "
    "do), which XLA lowers; batches of graphs of varying size compile once per new shape, so pad "
    "them to a few sizes (XLA402).",
}
# Libraries that run on the CPU as well as CUDA, but on no XLA device: said as what they are.
# DGL: DGLContext.STR2MASK names cpu/gpu/cuda and others, no "xla" (held-out 101's multi-GPU
# graph prediction moves each batched graph to the device).
CPU_OR_CUDA_LIBRARIES = {
    "dgl": "DGL keeps its graphs and runs its message-passing kernels on the CPU or CUDA only: "
    "its device table has no XLA entry, so `graph.to(<XLA device>)` raises KeyError('xla') "
    "and its kernels cannot take XLA tensors",
}
LARC_MESSAGE = (
    "apex's LARC is plain PyTorch (it rescales each parameter's learning rate by its trust "
    "ratio) and runs on XLA, but apex itself is built for CUDA and is rarely installed on XLA "
    "hosts; LARC's per-parameter `if param_norm != 0 and grad_norm != 0` also reads two device "
    "values per parameter every step (a sync each)"
)
LARC_MANUAL = (
    "Keep LARC (no torch.optim optimizer does the same: replacing it changes the optimizer): "
    "copy its class into the project, or install apex without its CUDA extensions; to drop the "
    "per-parameter syncs, compute the trust ratio with torch.where instead of the Python `if`."
)
CUDA_LIBRARIES = {
    "apex": "NVIDIA apex builds CUDA kernels (amp, FusedAdam, DDP): on XLA use torch.autocast"
    '("xla", dtype=torch.bfloat16), torch.optim / torch_xla.amp.syncfree optimizers and DDP over '
    "the xla backend",
    "bitsandbytes": "bitsandbytes quantization and 8-bit optimizers are CUDA kernels: on XLA use "
    "bf16 weights and torch.optim / syncfree optimizers",
    "xformers": "xformers attention kernels are CUDA-only: use "
    "torch.nn.functional.scaled_dot_product_attention (lowered by XLA)",
    "flash_attn": "flash-attn kernels are CUDA-only: use "
    "torch.nn.functional.scaled_dot_product_attention, or torch_xla's flash_attention on TPU",
    "pynvml": "NVML queries NVIDIA GPUs only: use xm.get_memory_info(device) on XLA",
    "cupy": "CuPy arrays live on CUDA: keep the data in torch tensors on the XLA device",
    "amp_C": "amp_C is apex's compiled CUDA extension (multi-tensor scale/axpby/l2norm kernels): "
    "it is not installed on XLA hosts and its kernels cannot take XLA tensors",
    "warpctc_pytorch": "Baidu's warp-ctc binding runs its CTC kernels on CPU or CUDA tensor "
    "storage: it cannot take XLA tensors",
    "triton": "Triton kernels (@triton.jit) run on CUDA/ROCm tensors only and cannot take XLA "
    "tensors: the first launch on an XLA tensor fails",
}


# Hugging Face's kernel hub (``kernels`` package): prebuilt CUDA (ROCm, Metal) kernels.
HUB_KERNEL_CALLS = frozenset({"kernels.get_kernel", "kernels.get_local_kernel"})
HUB_KERNEL_MESSAGE = (
    "{call}() loads a prebuilt kernel from the Hugging Face hub: those are CUDA (or ROCm/Metal) "
    "binaries and cannot take XLA tensors, so the first call on the model's tensors fails"
)
HUB_KERNEL_MANUAL = (
    "Call the PyTorch op the kernel implements instead (for attention kernels "
    "torch.nn.functional.scaled_dot_product_attention, lowered by XLA), or torch_xla's "
    "Pallas kernels (flash_attention) on TPU."
)


# apex's use sites beside its import (amp.initialize / amp.scale_loss are XLA103's): where the
# script must change, not only that it imports apex (held-out 20, ViT-pytorch's apex DDP).
APEX_SITES: tuple[tuple[str, str, str], ...] = (
    (
        "apex.parallel.DistributedDataParallel",
        "it all-reduces the gradients with NCCL",
        "Wrap the model in torch.nn.parallel.DistributedDataParallel over the xla process group "
        "(dist.init_process_group('xla', init_method='xla://') under torch_xla.launch), or drop "
        "the wrapper and step with xm.optimizer_step(optimizer), which all-reduces the gradients.",
    ),
    (
        "apex.parallel.convert_syncbn_model",
        "its batch statistics are CUDA kernels synchronised over NCCL",
        "Keep a plain BatchNorm per replica, or all-reduce its statistics with xm.all_reduce.",
    ),
    (
        "apex.parallel.SyncBatchNorm",
        "its batch statistics are CUDA kernels synchronised over NCCL",
        "Keep a plain BatchNorm per replica, or all-reduce its statistics with xm.all_reduce.",
    ),
    (
        "apex.optimizers.",
        "its update is a fused CUDA kernel",
        "Use the torch.optim optimizer with the same update (FusedAdam: torch.optim.Adam, or "
        "AdamW with adam_w_mode; FusedSGD: torch.optim.SGD), or a torch_xla.amp.syncfree one.",
    ),
)


AMP_C_MANUAL = (
    "Do the same update with torch's _foreach ops, which XLA lowers (multi_tensor_axpby(a, b) "
    "into out: torch._foreach_mul_(out, a) then torch._foreach_add_(out, other, alpha=b); "
    "multi_tensor_scale: torch._foreach_mul_; multi_tensor_l2norm: torch._foreach_norm), or a "
    "loop over the tensors."
)


def apex_site_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    """Each call of apex's DDP, SyncBatchNorm and fused optimizers, with what replaces it,
    and of its ``amp_C`` multi-tensor kernels (FastPitch's EMA, held-out 39)."""
    for call, name in model.calls_to_prefix("amp_C"):
        shown = model.segment(call.func)
        named = "" if shown == name else f" ({name})"
        yield Finding(
            code,
            f"{shown}(){named} is an apex CUDA kernel: it cannot take XLA tensors (and amp_C "
            "is not installed without apex's CUDA build)",
            model.span(call),
            Severity.WARNING,
            manual=AMP_C_MANUAL,
        )
    for call, name in model.calls_to_prefix("apex"):
        for prefix, what, manual in APEX_SITES:
            if name == prefix or (prefix.endswith(".") and name.startswith(prefix)):
                shown = model.segment(call.func)
                yield Finding(
                    code,
                    f"{shown}() ({name}) is CUDA-only: {what}; it cannot take XLA tensors",
                    model.span(call),
                    Severity.WARNING,
                    manual=manual,
                )
                break


def _larc_only(model: ScriptModel) -> bool:
    """Every apex import of the script is LARC (``from apex.parallel.LARC import LARC``)."""
    found = False
    for imp in model.import_nodes:
        if isinstance(imp, ast.Import):
            mods = [a.name for a in imp.names if a.name.split(".")[0] == "apex"]
            if any(m != "apex.parallel.LARC" for m in mods):
                return False
            found = found or bool(mods)
        elif not imp.level and (imp.module or "").split(".")[0] == "apex":
            larc = imp.module == "apex.parallel.LARC" or (
                imp.module == "apex.parallel" and all(a.name == "LARC" for a in imp.names)
            )
            if not larc:
                return False
            found = True
    return found


def library_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    seen: set[str] = set()
    larc = _larc_only(model)
    for imp in model.import_nodes:
        names = [a.name for a in imp.names] if isinstance(imp, ast.Import) else [imp.module or ""]
        if isinstance(imp, ast.ImportFrom) and imp.level:
            continue
        for name in names:
            root = name.split(".")[0]
            if root == "apex" and larc and root not in seen:
                seen.add(root)
                yield Finding(
                    code, LARC_MESSAGE, model.span(imp), Severity.WARNING, manual=LARC_MANUAL
                )
            if root in CPU_OR_CUDA_LIBRARIES and root not in seen:
                seen.add(root)
                yield Finding(
                    code,
                    CPU_OR_CUDA_LIBRARIES[root],
                    model.span(imp),
                    Severity.WARNING,
                    manual=LIBRARY_MANUAL[root],
                )
            if root in CUDA_LIBRARIES and root not in seen:
                seen.add(root)
                yield Finding(
                    code,
                    f"{root} is a CUDA-only library: {CUDA_LIBRARIES[root]}",
                    model.span(imp),
                    Severity.WARNING,
                    manual=LIBRARY_MANUAL[root],
                )
    for call in model.calls_to(*HUB_KERNEL_CALLS):
        shown = model.segment(call.func)
        yield Finding(
            code,
            HUB_KERNEL_MESSAGE.format(call=shown),
            model.span(call),
            Severity.WARNING,
            manual=HUB_KERNEL_MANUAL,
        )
