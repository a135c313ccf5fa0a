"""XLA501's environment variables that torch_xla 2.9 no longer honours or deprecates, set
through ``os.environ`` or ``os.putenv``: the XLA:GPU/XRT era's device settings
(``PJRT_DEVICE=CUDA``, ``GPU_NUM_DEVICES``), which find no device, and the precision switches.

The precision switches differ (verified on torch_xla 2.9 under PJRT_DEVICE=CPU, with the
variable set before or after ``import torch_xla``): ``XLA_USE_BF16`` / ``XLA_DOWNCAST_BF16``
still work (a float32 tensor on the XLA device computes in bf16; torch_xla logs that they will
be deprecated), while ``XLA_USE_FP16`` / ``XLA_DOWNCAST_FP16`` only warn and the run computes in
float32. No finding offers a fix: removing a bf16 switch changes the precision the program
trains in, and its replacement (explicit casts, autocast) changes which dtype the tensors report.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, const_str
from ..base import Finding, Severity

GPU_ERA = "is an XLA:GPU-era setting that current torch_xla (2.9) does not honour"
BF16_REPLACEMENT = (
    'cast explicitly instead (model.to(torch.bfloat16) and bf16 inputs) or use torch.autocast("xla", '
    "dtype=torch.bfloat16)"
)
# key -> (what torch_xla 2.9 does with it, what to do by hand).
ENV: dict[str, tuple[str, str]] = {
    "PJRT_DEVICE": (
        GPU_ERA,
        "XLA on NVIDIA GPUs was deprecated in torch_xla 2.8 and removed in 2.9: "
        "PJRT_DEVICE=CUDA/GPU finds no device. Use PJRT_DEVICE=TPU, NEURON or CPU, or pin a "
        "torch_xla < 2.9 build with its CUDA plugin.",
    ),
    "GPU_NUM_DEVICES": (
        GPU_ERA,
        "GPU_NUM_DEVICES belongs to the XLA:GPU/XRT era; PJRT ignores it and torch_xla 2.9 "
        "has no GPU device. For CPU test runs use CPU_NUM_DEVICES.",
    ),
    "XLA_USE_BF16": (
        "is deprecated: torch_xla 2.9 still honours it (float32 and float64 tensors on the XLA "
        "device compute in bf16) but warns it will be removed; " + BF16_REPLACEMENT,
        "Keep the variable until the script casts explicitly: removing it alone makes the run "
        "compute in float32 instead of bf16. To replace it, convert the model and inputs with "
        '.to(torch.bfloat16) or run the forward pass under torch.autocast("xla", '
        "dtype=torch.bfloat16); either changes the dtype the tensors report (and that "
        "checkpoints save), so check what reads it, then drop the variable.",
    ),
    "XLA_DOWNCAST_BF16": (
        "is deprecated: torch_xla 2.9 still honours it (float32 tensors on the XLA device "
        "compute in bf16, float64 in float32) but warns it will be removed; " + BF16_REPLACEMENT,
        "Keep the variable until the script casts explicitly: removing it alone makes the run "
        "compute in float32 instead of bf16. To replace it, downcast the model and inputs with "
        '.to(torch.bfloat16) or run the forward pass under torch.autocast("xla", '
        "dtype=torch.bfloat16); either changes the dtype the tensors report (and that "
        "checkpoints save), so check what reads it, then drop the variable.",
    ),
    "XLA_USE_FP16": (
        "is deprecated and torch_xla 2.9 ignores it (it warns, and the run computes in float32)",
        "The run computes in float32 whatever this says. To train in reduced precision on XLA "
        'use torch.autocast("xla", dtype=torch.bfloat16), or convert the model with '
        "model.to(torch.bfloat16); then drop the variable.",
    ),
}
ENV["XLA_DOWNCAST_FP16"] = ENV["XLA_USE_FP16"]
# A switch set to one of these is off: it changes nothing (torch_xla 2.9 reads "0"/"false" so).
OFF = frozenset({"", "0", "false"})
PRECISION = frozenset({"XLA_USE_BF16", "XLA_DOWNCAST_BF16", "XLA_USE_FP16", "XLA_DOWNCAST_FP16"})


def _env_assignments(model: ScriptModel) -> Iterator[tuple[ast.AST, str, ast.expr | None]]:
    """(anchor, key, value) for ``os.environ[k] = v``, ``os.environ.setdefault(k, v)``, ``os.putenv``."""
    for node in model.nodes_of(ast.Assign, ast.Call):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and model.qualname(t.value) == "os.environ":
                    key = const_str(t.slice)
                    if key is not None:
                        yield t, key, node.value
        elif isinstance(node, ast.Call) and model.call_name(node) in {
            "os.environ.setdefault",
            "os.putenv",
        }:
            key = const_str(node.args[0]) if node.args else None
            if key is not None:
                yield node, key, node.args[1] if len(node.args) > 1 else None


def gpu_era_env_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    for anchor, key, value in _env_assignments(model):
        if key not in ENV:
            continue
        text = const_str(value)
        if key == "PJRT_DEVICE" and (text or "").upper() not in {"GPU", "CUDA"}:
            continue
        if key in PRECISION and text is not None and text.strip().lower() in OFF:
            continue
        message, manual = ENV[key]
        yield Finding(
            code,
            f"{key} {message}",
            model.span(anchor),
            Severity.WARNING,
            manual=manual,
            deprecated=key in PRECISION,
        )
