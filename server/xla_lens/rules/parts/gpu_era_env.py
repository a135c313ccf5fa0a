"""XLA501's environment variables of the XLA:GPU/XRT era (``PJRT_DEVICE=CUDA``,
``GPU_NUM_DEVICES``, ``XLA_USE_BF16``...), set through ``os.environ`` or ``os.putenv``: torch_xla
2.9 has no GPU device and no longer reads the precision switches."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, const_str
from ..base import Finding, Severity

ENV_MANUAL = {
    "PJRT_DEVICE": "XLA on NVIDIA GPUs was deprecated in torch_xla 2.8 and removed in 2.9: "
    "PJRT_DEVICE=CUDA/GPU finds no device. Use PJRT_DEVICE=TPU, NEURON or CPU, or pin a "
    "torch_xla < 2.9 build with its CUDA plugin.",
    "GPU_NUM_DEVICES": "GPU_NUM_DEVICES belongs to the XLA:GPU/XRT era; PJRT ignores it and "
    "torch_xla 2.9 has no GPU device. For CPU test runs use CPU_NUM_DEVICES.",
    "XLA_USE_BF16": "XLA_USE_BF16/XLA_USE_FP16 are gone from current torch_xla: use "
    'torch.autocast("xla", dtype=torch.bfloat16), or convert the model with model.to(torch.bfloat16).',
}
ENV_MANUAL["XLA_USE_FP16"] = ENV_MANUAL["XLA_USE_BF16"]
ENV_MANUAL["XLA_DOWNCAST_BF16"] = ENV_MANUAL["XLA_USE_BF16"]
ENV_MANUAL["XLA_DOWNCAST_FP16"] = ENV_MANUAL["XLA_USE_BF16"]


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
        if key not in ENV_MANUAL:
            continue
        if key == "PJRT_DEVICE" and (const_str(value) or "").upper() not in {"GPU", "CUDA"}:
            continue
        yield Finding(
            code,
            f"{key} is an XLA:GPU-era setting that current torch_xla (2.9) does not honour",
            model.span(anchor),
            Severity.WARNING,
            manual=ENV_MANUAL[key],
        )
