"""XLA409's table: calls whose aten ops torch_xla 2.9 does not lower, so they run on the CPU.

Every entry was measured on torch 2.9.0 + torch_xla 2.9.0 (PJRT CPU) with
``torch_xla.debug.metrics.executed_fallback_ops()``, and none of these ops is registered in
torch_xla's ``xla_native_functions.yaml``: they fall back on every XLA device, not just the
CPU one. Ops lowered only on some devices (``upsample_bilinear2d_backward`` lowers on TPU
alone) are left to the Run report, which names what fell back on the device actually used.
Ops whose output size depends on the data (``nonzero``, ``unique``) are XLA402's.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...semantic.model import ScriptModel, const_str, keyword, method_name, receiver

ABORTS = "aborts"  # ``FallbackOp.effect``: the process dies (no Python exception)


@dataclass(frozen=True)
class FallbackOp:
    shown: str  # ``torch.stft``
    aten: str  # ``aten::_fft_r2c``
    advice: str = ""
    effect: str = "fallback"  # or ABORTS


GENERIC = (
    "torch_xla 2.9 has no lowering for it: keep it out of the step (compute it on CPU tensors "
    "in the data pipeline, before the batch moves to the device) or accept one CPU round trip "
    "per call."
)
SPECTRAL = (
    "Compute spectrograms in the data pipeline on CPU tensors, before the batch moves to the "
    "device; one that must be differentiable on the device (a mel loss on generated audio) can "
    "be a conv1d with fixed cosine and sine kernels, which lowers. Take magnitudes with "
    "`torch.view_as_real(spec).pow(2).sum(-1).sqrt()`: `.abs()` of a complex XLA tensor raises "
    '"abs does not support automatic differentiation for outputs with complex dtype" in '
    "backward (measured)."
)
MEDIAN = (
    "`torch.kthvalue(x, (n + 1) // 2, dim).values` (n = the size of that dim) gives exactly "
    "the values torch.median does (the lower middle one) and lowers (measured)."
)
BUCKETS = (
    "Count the boundaries below each value instead: `(x.unsqueeze(-1) > boundaries).sum(-1)` "
    "equals `torch.bucketize(x, boundaries)` (`>=` for right=True) and lowers (measured)."
)
HUBER = (
    "`delta * F.smooth_l1_loss(x, y, beta=delta)` equals `F.huber_loss(x, y, delta=delta)` and "
    "lowers (measured)."
)
WEIGHT_NORM = (
    "Write the norm out in plain ops, e.g. a parametrization of your own computing "
    "`g * v / torch.linalg.vector_norm(v, dim=<all but 0>, keepdim=True)`: the same weights, "
    "and it lowers (measured). Mind the state-dict keys if you load old checkpoints."
)
COUNTS = (
    "With a known number of classes `n`, `F.one_hot(idx, n).sum(0)` (or "
    "`torch.zeros(n).scatter_add_(0, idx, torch.ones_like(idx, dtype=torch.float))`) counts "
    "on the device and lowers."
)
ISTFT = (
    "Run the inverse transform on the CPU (`torch.istft(spec.cpu(), ...)`) or outside the "
    "training step: on an XLA tensor it aborted the whole process in torch_xla 2.9 "
    "(`Check failed: p1.size() == p2.size()`, measured on PJRT CPU)."
)

_FUNCTIONS: dict[str, FallbackOp] = {
    "torch.stft": FallbackOp("torch.stft", "aten::_fft_r2c", SPECTRAL),
    "torch.istft": FallbackOp("torch.istft", "aten::_fft_c2r", ISTFT, ABORTS),
    "torch.nn.functional.ctc_loss": FallbackOp("F.ctc_loss", "aten::_ctc_loss"),
    "torch.searchsorted": FallbackOp("torch.searchsorted", "aten::searchsorted", BUCKETS),
    "torch.bucketize": FallbackOp("torch.bucketize", "aten::bucketize", BUCKETS),
    "torch.histc": FallbackOp("torch.histc", "aten::histc"),
    "torch.bincount": FallbackOp("torch.bincount", "aten::bincount", COUNTS),
    "torch.median": FallbackOp("torch.median", "aten::median", MEDIAN),
    "torch.nanmedian": FallbackOp("torch.nanmedian", "aten::nanmedian"),
    "torch.mode": FallbackOp("torch.mode", "aten::mode"),
    "torch.nn.functional.grid_sample": FallbackOp("F.grid_sample", "aten::grid_sampler_2d"),
    "torch.nn.functional.embedding_bag": FallbackOp("F.embedding_bag", "aten::_embedding_bag"),
    "torch.nn.functional.unfold": FallbackOp("F.unfold", "aten::im2col"),
    "torch.nn.functional.fold": FallbackOp("F.fold", "aten::col2im"),
    "torch.nn.functional.huber_loss": FallbackOp("F.huber_loss", "aten::huber_loss", HUBER),
    "torch.nn.functional.multi_margin_loss": FallbackOp(
        "F.multi_margin_loss", "aten::multi_margin_loss"
    ),
    "torch.linalg.cholesky": FallbackOp("torch.linalg.cholesky", "aten::linalg_cholesky_ex"),
    "torch.lgamma": FallbackOp("torch.lgamma", "aten::lgamma"),
    "torch.digamma": FallbackOp("torch.digamma", "aten::digamma"),
    "torch.special.digamma": FallbackOp("torch.special.digamma", "aten::digamma"),
    "torch.special.gammaln": FallbackOp("torch.special.gammaln", "aten::lgamma"),
    "torch.angle": FallbackOp("torch.angle", "aten::angle"),
    "torch.polar": FallbackOp("torch.polar", "aten::polar"),
    "torch.logcumsumexp": FallbackOp("torch.logcumsumexp", "aten::_logcumsumexp"),
    "torch.cummin": FallbackOp("torch.cummin", "aten::_cummin_helper"),
}
# ``x.median()``: only where the receiver is judged a device tensor (pandas has ``.median``).
_METHODS: dict[str, FallbackOp] = {
    "stft": _FUNCTIONS["torch.stft"],
    "istft": _FUNCTIONS["torch.istft"],
    "median": _FUNCTIONS["torch.median"],
    "nanmedian": _FUNCTIONS["torch.nanmedian"],
    "bincount": _FUNCTIONS["torch.bincount"],
    "histc": _FUNCTIONS["torch.histc"],
    "lgamma": _FUNCTIONS["torch.lgamma"],
    "digamma": _FUNCTIONS["torch.digamma"],
    "logcumsumexp": _FUNCTIONS["torch.logcumsumexp"],
    "cummin": _FUNCTIONS["torch.cummin"],
}
# Modules (and wrappers) whose every forward runs such an op: reported where they are made.
_MODULES: dict[str, FallbackOp] = {
    "torch.nn.CTCLoss": FallbackOp("nn.CTCLoss", "aten::_ctc_loss"),
    "torch.nn.EmbeddingBag": FallbackOp("nn.EmbeddingBag", "aten::_embedding_bag"),
    "torch.nn.Unfold": FallbackOp("nn.Unfold", "aten::im2col"),
    "torch.nn.Fold": FallbackOp("nn.Fold", "aten::col2im"),
    "torch.nn.HuberLoss": FallbackOp("nn.HuberLoss", "aten::huber_loss", HUBER),
    "torch.nn.MultiMarginLoss": FallbackOp("nn.MultiMarginLoss", "aten::multi_margin_loss"),
    "torch.nn.utils.weight_norm": FallbackOp(
        "weight_norm", "aten::_weight_norm_interface", WEIGHT_NORM
    ),
    "torch.nn.utils.parametrizations.weight_norm": FallbackOp(
        "weight_norm", "aten::_weight_norm_interface", WEIGHT_NORM
    ),
}
_INTERPOLATE = frozenset({"torch.nn.functional.interpolate", "torch.nn.functional.upsample"})
_UPSAMPLE = frozenset({"torch.nn.Upsample"})
_RESAMPLING = {
    "bicubic": "aten::upsample_bicubic2d",
    "linear": "aten::upsample_linear1d",
}


def fallback_call(model: ScriptModel, node: ast.AST) -> tuple[FallbackOp, ast.expr, bool] | None:
    """(the op, the tensor it runs on, whether it is a method call) when ``node`` calls a
    function or tensor method that runs on the CPU; the tensor is the first argument or the
    method's receiver."""
    if not isinstance(node, ast.Call):
        return None
    name = model.call_name(node)
    if name is not None:
        if name.startswith("torch.fft."):
            op = FallbackOp(name, "aten::_fft_*", SPECTRAL)
        elif name in _INTERPOLATE:
            op = _resampling(node, name)
        else:
            op = _FUNCTIONS.get(name)
        if op is None or not node.args:
            return None
        return op, node.args[0], False
    method = method_name(node)
    recv = receiver(node)
    if recv is None or method is None:
        return None
    if method == "unfold" and len(node.args) + len(node.keywords) == 3:  # Tensor.unfold(d, n, s)
        return FallbackOp("Tensor.unfold", "aten::unfold_copy"), recv, True
    op = _METHODS.get(method)
    return (op, recv, True) if op is not None else None


def fallback_module(model: ScriptModel, node: ast.AST) -> FallbackOp | None:
    """The op when ``node`` makes a module (or weight-norm wrapper) whose forward runs it."""
    if not isinstance(node, ast.Call):
        return None
    name = model.call_name(node)
    if name in _UPSAMPLE:
        return _resampling(node, "nn.Upsample")
    return _MODULES.get(name) if name is not None else None


def _resampling(call: ast.Call, shown: str) -> FallbackOp | None:
    kw = keyword(call, "mode")
    mode = const_str(kw.value) if kw is not None else None
    aten = _RESAMPLING.get(mode or "")
    if aten is None:
        return None
    return FallbackOp(f'{shown}(mode="{mode}")', aten)
