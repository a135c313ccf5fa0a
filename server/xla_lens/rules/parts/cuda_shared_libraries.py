"""XLA405: NVIDIA's shared libraries loaded through ctypes (NVIDIA DeepLearningExamples'
``increase_l2_fetch_granularity``, held-out 153's Transformer-M and held-out 101's MONAI
DiNTS: ``ctypes.CDLL("libcudart.so").cudaDeviceSetLimit(...)``).

The CUDA runtime, driver, NVML, NCCL, cuBLAS and cuDNN are not installed on a TPU or Trainium
host: loading one raises OSError ("cannot open shared object file"), and what its functions
set is CUDA state the XLA device never reads. Reported at the load, with no fix: whether the
call goes or moves under a CUDA test is the author's choice.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...semantic.cuda_branches import cuda_only_branch
from ...semantic.model import ScriptModel, const_str
from ..base import Finding, Severity

LOADERS = frozenset(
    {
        "ctypes.CDLL",
        "ctypes.cdll.LoadLibrary",
        "ctypes.WinDLL",
        "ctypes.PyDLL",
    }
)
NVIDIA_LIBRARY = re.compile(r"^(lib)?(cudart|cuda|nvidia-ml|nvml|nccl|cublas\w*|cudnn\w*)(\b|\.|$)")
WHAT = {
    "cudart": "the CUDA runtime",
    "cuda": "the CUDA driver",
    "nvidia-ml": "NVML (NVIDIA's management library)",
    "nvml": "NVML (NVIDIA's management library)",
    "nccl": "NCCL",
}
MANUAL = (
    "Drop the call on XLA (the XLA runtime sets up its device itself), or run it only where "
    "CUDA is there (`if torch.cuda.is_available():`)."
)


def shared_library_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    for call in model.calls_to(*LOADERS):
        name = const_str(call.args[0]) if call.args else None
        found = NVIDIA_LIBRARY.match(name or "")
        if found is None or cuda_only_branch(model, call) is not None:
            continue  # under ``if torch.cuda.is_available():`` it runs where CUDA is
        library = found.group(2)
        what = WHAT.get(library, f"NVIDIA's {library}")
        yield Finding(
            code,
            f"{model.segment(call)[:60]} loads {what}: it is not installed on a TPU or "
            "Trainium host (OSError: cannot open shared object file), and what its functions "
            "set is CUDA state the XLA device never reads",
            model.span(call),
            Severity.WARNING,
            manual=MANUAL,
        )
