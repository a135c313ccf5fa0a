"""XLA101 where a third-party library picks CUDA by default: FID / Inception Score
packages run their Inception network on ``torch.device('cuda:0')`` (pytorch-gan-metrics,
pytorch-image-generation-metrics), ``torch.device('cuda')`` (clean-fid) or ``cuda=True``
(torch-fidelity) unless the call says otherwise. Nothing in the script names CUDA, yet on an
XLA host the first evaluation raises (no CUDA driver) — held-out 46's WGAN-GP at step 1. Model
summaries too: torchinfo moves the model to its own device choice, torchsummary builds its
inputs on CUDA or the CPU only.

No fix: which device the metric should use (the host CPU, or the XLA device with a large
Inception graph to compile) is the user's choice, so the finding says what to pass."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.advice import Advice
from ...semantic.model import ScriptModel, method_name

# Package → its CUDA default as the library writes it (a `device=` keyword overrides it).
_DEVICE_KEYWORD_PACKAGES = {
    "pytorch_gan_metrics": "torch.device('cuda:0')",
    "pytorch_image_generation_metrics": "torch.device('cuda:0')",
    "cleanfid": 'torch.device("cuda")',
}
# clean-fid's functions that take ``device=`` (fid.py and features.py, clean-fid 0.1.35).
_CLEANFID_FUNCTIONS = frozenset(
    {
        "compute_fid",
        "compute_kid",
        "make_custom_stats",
        "get_folder_features",
        "get_files_features",
        "get_model_features",
        "fid_folder",
        "fid_model",
        "compare_folders",
        "feature_extractor",
        "build_feature_extractor",
    }
)
# pytorch-gan-metrics' entry points forward ``**kwargs`` to ``get_inception_feature(...,
# device=torch.device('cuda:0'))``.
_GAN_METRICS_PREFIXES = ("get_inception", "get_fid", "calc_")


def library_device_default_advice(model: ScriptModel) -> Iterator[Advice]:
    for call in model.calls:
        qualname = model.call_name(call)
        if not qualname or "." not in qualname:
            continue
        package, _, rest = qualname.partition(".")
        function = qualname.rpartition(".")[2]
        keywords = {k.arg for k in call.keywords}
        if None in keywords:
            continue  # ``**kwargs`` may carry the device: out of sight
        if package == "torch_fidelity" and function == "calculate_metrics":
            yield from _fidelity_advice(model, call)
            continue
        if package in {"torchinfo", "torchsummary"} and function == "summary":
            yield from _summary_advice(model, call, package, keywords)
            continue
        if package not in _DEVICE_KEYWORD_PACKAGES or "device" in keywords:
            continue
        if package == "cleanfid" and function not in _CLEANFID_FUNCTIONS:
            continue
        if package != "cleanfid" and not function.startswith(_GAN_METRICS_PREFIXES):
            continue
        name = model.segment(call.func)
        yield Advice(
            f"{name}() runs its Inception network on CUDA: without `device=` the library "
            f"uses {_DEVICE_KEYWORD_PACKAGES[package]}, which raises on an XLA host (no CUDA "
            "driver)",
            model.span(call),
            manual=f"Pass `device=torch.device('cpu')` to {name}() to compute the metric on the "
            "host (or pass the XLA device), so that it never asks for CUDA.",
        )


def _fidelity_advice(model: ScriptModel, call: ast.Call) -> Iterator[Advice]:
    cuda = next((k.value for k in call.keywords if k.arg == "cuda"), None)
    if cuda is not None and not (isinstance(cuda, ast.Constant) and cuda.value is True):
        return  # ``cuda=False`` or the script's own test
    name = model.segment(call.func)
    yield Advice(
        f"{name}() runs its feature extractor on CUDA "
        + ("(`cuda=True`)" if cuda is not None else "(torch-fidelity's default is `cuda=True`)")
        + ", which fails on an XLA host (no CUDA driver)",
        model.span(call),
        manual=f"Pass `cuda=False` to {name}() on an XLA host: the metric is computed on the "
        "host CPU.",
    )


def _summary_advice(
    model: ScriptModel, call: ast.Call, package: str, keywords: set[str | None]
) -> Iterator[Advice]:
    """``torchinfo.summary(model, input_size)`` with no device and no input data moves the
    model to ``"cuda" if torch.cuda.is_available() else "cpu"`` unless its parameters are on
    CUDA (``get_device`` in torchinfo 1.8): on an XLA host, an XLA model back to the CPU
    (held-out 48's simple-diffusion crashed at step 0). torchsummary 1.5 builds its inputs on
    CUDA if available, else on the CPU, and takes no other device: any device it is given
    fails once the model is on the XLA device."""
    name = model.segment(call.func)
    if package == "torchinfo":
        if "device" in keywords:
            return
        if "input_data" in keywords or len(call.args) > 1 and not _is_size(call.args[1]):
            return  # given input data, torchinfo leaves the model where it is
        if not call.args or not _moved_before(model, call, call.args[0]):
            return  # summarised before it is placed: the move comes after
        yield Advice(
            f"{name}() without `device=` moves the model to CUDA when available, else to the "
            "CPU, unless its parameters are on CUDA: on an XLA host it moves the XLA model "
            "back to the CPU (new Parameter objects: an optimizer built before keeps the XLA "
            "ones, and the next forward on XLA inputs raises)",
            model.span(call),
            manual=f"Pass the model's device to {name}() (`device=device`, the XLA device), or "
            "summarise the model before moving it to the device.",
        )
        return
    if not call.args or not _moved_before(model, call, call.args[0]):
        return  # summarised before the model is placed: it runs on the CPU, as on a CPU host
    yield Advice(
        f"{name}() builds its inputs on CUDA when CUDA is available, else on the CPU (its "
        '`device=` takes only "cuda" or "cpu"): on an XLA host the model, already on the XLA '
        "device, gets CPU inputs and the summary's forward fails",
        model.span(call),
        manual=f"Call {name}() before moving the model to the XLA device, or use torchinfo's "
        "summary with `device=` the XLA device.",
    )


def _is_size(node: ast.expr) -> bool:
    """``(1, 3, 32, 32)`` / ``[...]``: an input size, not input data."""
    return isinstance(node, ast.Tuple | ast.List) and all(
        isinstance(e, ast.Constant | ast.Tuple | ast.List | ast.Name | ast.Attribute | ast.BinOp)
        for e in node.elts
    )


def _moved_before(model: ScriptModel, call: ast.Call, module: ast.expr) -> bool:
    """``module`` was moved to a device earlier in the same function: ``m.to(d)``,
    ``m.cuda()``, or ``m = X(...).to(d)``."""
    shown = model.segment(module)
    scope = model.enclosing_function(call) or model.tree
    for node in model.walk_scope(scope):
        if getattr(node, "lineno", call.lineno) >= call.lineno:
            continue
        if isinstance(node, ast.Call) and method_name(node) in {"to", "cuda"}:
            receiver = node.func.value  # type: ignore[attr-defined]
            if model.segment(receiver) == shown:
                return True
            parent = model.parent(node)
            if isinstance(parent, ast.Assign) and any(
                model.segment(t) == shown for t in parent.targets
            ):
                return True
    return False
