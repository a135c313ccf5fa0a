"""XLA108 for a checkpoint handed to a save helper of another module.

``utils.save_on_master({"model": model.state_dict(), ...}, path)`` (DeiT, MAE and many repos
built on them): the ``torch.save`` that writes the XLA tensors lives in ``utils``, so there
is no call here to swap for ``xm.save``. The finding is at the call and has no fix: the
change belongs inside the helper (xla-lens edits only the file it is given). When the
helper's module is a sibling file, it is read (never imported): a helper that already calls
``xm.save`` is left alone, one that calls ``torch.save`` is named with its line.

Only helpers of the project count: a function imported from a module that is neither the
standard library nor a known package (libraries such as safetensors or accelerate decide for
themselves how they write XLA tensors; NeuronX Distributed's ``checkpointing.save`` /
``nxd.save_checkpoint`` are written for XLA), whose name says it saves, and that receives a
state dict. Methods of objects (``accelerator.save``, ``saver.save_checkpoint``) are left out:
what they are is not visible from here.

Only ``torch.save``, or a helper seen to reach it, is reported. A helper whose module can be
read but that writes some other way is not. One whose module cannot be read is reported only
where that is no sign of a library and the script is still being converted: a script on disk
whose import is found nowhere in its workspace imports an installed package, and a script
already written for XLA chose how it saves.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ...semantic.device_intent import being_converted, hand_written_xla
from ...semantic.diskread import read_regular
from ...semantic.model import ScriptModel
from ...semantic.workspace import MAX_BYTES, module_file
from ..base import Finding, RuleContext, Severity

# Packages whose save functions are theirs to get right on XLA (or are not checkpoints).
KNOWN_PACKAGES = frozenset(
    {
        "torch", "torch_xla", "torchvision", "numpy", "np", "safetensors", "accelerate",
        "lightning", "pytorch_lightning", "lightning_fabric", "transformers", "huggingface_hub",
        "diffusers", "peft", "datasets", "deepspeed", "mlflow", "wandb", "timm", "fairseq",
        "mmengine", "mmcv", "detectron2", "ignite", "composer", "apex", "colossalai", "jax",
        "flax", "orbax", "tensorflow", "keras", "joblib", "dill", "ray", "optuna", "comet_ml",
        "neptune", "clearml", "tensorboardX", "fsspec", "boto3", "hydra", "omegaconf",
        "scipy", "sklearn", "pandas", "PIL", "cv2", "matplotlib",
        # Written for XLA (AWS Neuron): their saves move the XLA tensors themselves.
        "neuronx_distributed", "neuronx_distributed_training", "torch_neuronx",
        "transformers_neuronx", "optimum", "libneuronxla",
    }
)  # fmt: skip
XM_SAVE = ("xm.save", "xla_model.save", "_maybe_convert_to_cpu", ".cpu()")


@dataclass(frozen=True)
class _Helper:
    shown: str  # how the call names it: ``utils.save_on_master``
    module: str  # ``utils`` / ``pkg.misc`` ("" for ``from . import x``'s package)
    level: int
    function: str


def helper_save_findings(
    model: ScriptModel,
    ctx: RuleContext,
    code: str,
    is_checkpoint: Callable[[ScriptModel, ast.AST | None], bool],
) -> Iterator[Finding]:
    for call in model.calls:
        func = call.func
        named = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if "save" not in named.lower():
            continue  # cheap first: most calls are not save helpers
        helper = _project_helper(model, call)
        if helper is None or "save" not in helper.function.lower():
            continue
        values = [*call.args, *(kw.value for kw in call.keywords if kw.arg is not None)]
        if not any(is_checkpoint(model, v) for v in values):
            continue
        where = _helper_source(model, helper)
        if where in ("xla", "other") or (where is None and not _unseen_counts(model, helper)):
            continue
        yield _finding(model, call, helper, where, ctx, code)


def _unseen_counts(model: ScriptModel, helper: _Helper) -> bool:
    """Whether a helper whose torch.save cannot be seen is still reported: in a script being
    converted (one written for XLA chose how it saves), and unless the script is on disk and
    the module is found nowhere in its workspace (then it is an installed package's)."""
    if hand_written_xla(model) or (model.uses_torch_xla and not being_converted(model)):
        return False
    on_disk = bool(model.path) and not model.path.startswith("<")
    return not (on_disk and helper.level == 0 and _module_path(model, helper) is None)


def _project_helper(model: ScriptModel, call: ast.Call) -> _Helper | None:
    """The function of a project module this call runs (``utils.save_on_master(...)``,
    ``save_checkpoint(...)`` imported from one), or None."""
    func = call.func
    if isinstance(func, ast.Name):
        root, function, shown = func.id, func.id, func.id
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name | ast.Attribute):
        base = func.value
        while isinstance(base, ast.Attribute):
            base = base.value
        if not isinstance(base, ast.Name):
            return None
        root, function, shown = base.id, func.attr, model.segment(func)
    else:
        return None
    relative = _relative_import(model, root)
    if relative is not None:
        module, level = relative
        if isinstance(func, ast.Name):
            module, _, function = module.rpartition(".")
        return _Helper(shown, module, level, function)
    qualname = model.call_name(call)
    if root not in model.imports or qualname is None:
        return None
    module, _, function = qualname.rpartition(".")
    top = module.split(".")[0]
    if not module or top in KNOWN_PACKAGES or top in sys.stdlib_module_names:
        return None
    return _Helper(shown, module, 0, function)


def _relative_import(model: ScriptModel, name: str) -> tuple[str, int] | None:
    """``from . import ckpt_io`` → (``ckpt_io``, 1); ``from .misc import save`` →
    (``misc.save``, 1): the dotted path below the package, and the level."""
    for imp in model.import_nodes:
        if not isinstance(imp, ast.ImportFrom) or imp.level == 0:
            continue
        for alias in imp.names:
            if (alias.asname or alias.name) == name:
                path = f"{imp.module}.{alias.name}" if imp.module else alias.name
                return path, imp.level
    return None


def _helper_source(model: ScriptModel, helper: _Helper) -> str | tuple[str, int] | None:
    """``"xla"`` when the helper (a sibling file) already saves through xm.save or moves to
    the CPU; ``(file name, line)`` of its torch.save; ``"other"`` when it is read and calls no
    torch.save; None when it cannot be read."""
    path = _module_path(model, helper)
    if path is None:
        return None
    try:
        text = read_regular(path, MAX_BYTES).decode("utf-8", errors="replace")
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    fns = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    fn = fns.get(helper.function)
    if fn is None:
        return None
    body = ast.get_source_segment(text, fn) or ""
    if any(marker in body for marker in XM_SAVE):
        return "xla"
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in {"torch.save", "save"}:
            return path.name, node.lineno
    return "other"


def _module_path(model: ScriptModel, helper: _Helper) -> Path | None:
    if helper.level:
        # ``from . import ckpt_io``: the module is the imported name itself.
        return module_file(model.path, helper.module, helper.level)
    return module_file(model.path, helper.module, 0)


def _finding(
    model: ScriptModel,
    call: ast.Call,
    helper: _Helper,
    where: str | tuple[str, int] | None,
    ctx: RuleContext,
    code: str,
) -> Finding:
    if isinstance(where, tuple):
        how = f"it writes it with torch.save ({where[0]} line {where[1]})"
    else:
        how = "how it writes it is in another module, out of xla-lens's sight"
    message = (
        f"checkpoint of the model's state passed to `{helper.shown}`: {how}. After conversion "
        "the state holds XLA tensors, and torch.save pickles them as XLA tensors: the file "
        "loads only where torch_xla is installed"
    )
    if ctx.target == "legacy":
        manual = (
            f"inside `{helper.shown}`, write with xm.save(data, path) (it copies to the CPU and "
            "writes on the master ordinal only) and call it on every replica: torch_xla 1.x's "
            "xm.save waits for all of them, so it must not sit under a rank check"
        )
    else:
        manual = (
            f"inside `{helper.shown}`, write with xm.save(data, path) (it copies the XLA tensors "
            "to the CPU and writes on the master ordinal only), or move the tensors to the CPU "
            "before torch.save"
        )
    return Finding(code, message, model.span(call), Severity.WARNING, manual=manual)
