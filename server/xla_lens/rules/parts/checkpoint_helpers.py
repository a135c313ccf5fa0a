"""XLA108 for a checkpoint handed to a save helper of another module.

``utils.save_on_master({"model": model.state_dict(), ...}, path)`` (DeiT, MAE and many repos
built on them): the ``torch.save`` that writes the XLA tensors lives in ``utils``, so there
is no call here to swap for ``xm.save``. The finding is at the call and has no fix: the
change belongs inside the helper (xla-lens edits only the file it is given). When the
helper's module is a sibling file, it is read (never imported): a helper that already calls
``xm.save`` is left alone, one that calls ``torch.save`` is named with its line, also a few
helpers down (``utils.save_model(args, model, ...)`` builds the state dict and hands it to
``save_on_master``, whose ``torch.save`` it is): the finding names the chain.

Only helpers of the project count: a function imported from a module that is neither the
standard library nor a known package (libraries such as safetensors or accelerate decide for
themselves how they write XLA tensors; NeuronX Distributed's ``checkpointing.save`` /
``nxd.save_checkpoint`` are written for XLA), whose name says it saves, and that receives a
state dict (or builds one, ``.state_dict()``, on the way to its torch.save). Methods of objects (``accelerator.save``, ``saver.save_checkpoint``) are left out:
what they are is not visible from here.

Only ``torch.save``, or a helper seen to reach it, is reported. A helper whose module can be
read but that writes some other way is not. One whose module cannot be read is reported only
where that is no sign of a library and the script is still being converted: a script on disk
whose import is found nowhere in its workspace imports an installed package, and a script
already written for XLA chose how it saves.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ...semantic.device_intent import being_converted, hand_written_xla
from ...semantic.model import ScriptModel
from ...semantic.workspace import module_file
from ...semantic.workspace_calls import ParsedModule, definition, parsed_module
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
# ``state_dict[t_name] = t_val.to('cpu')`` (allenai's tpu_pretrain utils.save_checkpoint,
# held-out 87): the helper copies the state to the CPU itself.
CPU_MOVE = re.compile(r"""\.to\(\s*(?:['"]cpu['"]|torch\.device\(\s*['"]cpu['"]\s*\))\s*\)""")
# Functions followed from the helper the script calls to its torch.save (save_model ->
# save_on_master -> torch.save): bounded so a large utils module stays cheap to read.
CHAIN_DEPTH = 3


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
        passes_state = any(is_checkpoint(model, v) for v in values)
        where = _helper_source(model, helper)
        if isinstance(where, _Reach) and (passes_state or where.builds_state):
            if hand_written_xla(model):
                # Written for XLA by a person (cncast's train_tpu.py, held-out 94): how its
                # helper writes checkpoints is that script's choice, as with an unseen helper;
                # "after conversion" says nothing to it. Its own torch.save calls still count.
                continue
            # ``utils.save_model(args, model, ...)`` builds the state dict itself.
            yield _finding(model, call, helper, where, passes_state, ctx, code)
        elif passes_state and where is None and _unseen_counts(model, helper):
            yield _finding(model, call, helper, where, passes_state, ctx, code)


def helper_checkpoint_saves(
    model: ScriptModel, is_checkpoint: Callable[[ScriptModel, ast.AST | None], bool]
) -> list[ast.Call]:
    """Calls of project save helpers seen to reach a ``torch.save`` of a checkpoint
    (rnn-transducer's ``save_model(model, optimizer, config, name)``, held-out 159): the
    script writes checkpoints as surely as with its own torch.save."""
    found = []
    for call in model.calls:
        func = call.func
        named = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if "save" not in named.lower():
            continue
        helper = _project_helper(model, call)
        if helper is None or "save" not in helper.function.lower():
            continue
        values = [*call.args, *(kw.value for kw in call.keywords if kw.arg is not None)]
        where = _helper_source(model, helper)
        if isinstance(where, _Reach) and (
            where.builds_state or any(is_checkpoint(model, v) for v in values)
        ):
            found.append(call)
    return found


def _unseen_counts(model: ScriptModel, helper: _Helper) -> bool:
    """Whether a helper whose torch.save cannot be seen is still reported: in a script being
    converted (one written for XLA chose how it saves), and unless the script is on disk and
    the module is found nowhere in its workspace (then it is an installed package's)."""
    if hand_written_xla(model) or (model.uses_torch_xla and not being_converted(model)):
        return False
    if model.path == "<sibling>":
        # A sibling module read for XLA118's evidence follows no imports of its own: its
        # helper's helper is out of sight, not shown to need converting (kwt's
        # ``misc.save_model`` reaches a ``checkpoint.save_checkpoint`` that copies to the CPU).
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


@dataclass(frozen=True)
class _Reach:
    """The torch.save a helper reaches in the workspace."""

    file: str  # the file name that holds it
    line: int
    chain: tuple[str, ...]  # the functions from the one the script calls to the one saving
    builds_state: bool  # a ``.state_dict()`` call on the way: the helper builds a checkpoint


def _helper_source(model: ScriptModel, helper: _Helper) -> str | _Reach | None:
    """``"xla"`` when the helper (a workspace file) already saves through xm.save or moves to
    the CPU; the torch.save it reaches (itself or through helpers of the workspace it calls,
    ``CHAIN_DEPTH`` functions deep); ``"other"`` when it is read and reaches no torch.save;
    None when it cannot be read."""
    path = _module_path(model, helper)
    found = definition(path, helper.function) if path is not None else None
    if found is None:
        return None
    return _reach(found[0], found[1], CHAIN_DEPTH, set()) or "other"


def _reach(path: Path, name: str, depth: int, seen: set[tuple[Path, str]]) -> str | _Reach | None:
    module = parsed_module(path)
    fn = module.functions.get(name) if module is not None else None
    if module is None or fn is None or (path, name) in seen:
        return None
    seen.add((path, name))
    body = ast.get_source_segment(module.source, fn) or ""
    if any(marker in body for marker in XM_SAVE) or CPU_MOVE.search(body):
        return "xla"
    calls = sorted(
        (n for n in ast.walk(fn) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)
    )
    builds = any(isinstance(c.func, ast.Attribute) and c.func.attr == "state_dict" for c in calls)
    for call in calls:
        if _is_torch_save(module, call):
            return _Reach(path.name, call.lineno, (name,), builds)
    for call in calls if depth > 1 else []:
        target = _workspace_callee(module, call)
        sub = _reach(*target, depth - 1, seen) if target is not None else None
        if sub == "xla":
            return sub
        if isinstance(sub, _Reach):
            return _Reach(sub.file, sub.line, (name, *sub.chain), builds or sub.builds_state)
    return None


def _is_torch_save(module: ParsedModule, call: ast.Call) -> bool:
    """``torch.save(...)`` (``import torch`` under any name) or ``save(...)`` imported from
    torch."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        bound = module.imports.get(func.value.id, func.value.id)
        return func.attr == "save" and bound == "torch"
    return isinstance(func, ast.Name) and module.reexports.get(func.id) == ("torch", 0, "save")


def _workspace_callee(module: ParsedModule, call: ast.Call) -> tuple[Path, str] | None:
    """The workspace function ``f(...)`` runs: one of the module, or one it imports from
    another workspace module (a library's is None)."""
    func = call.func
    if not isinstance(func, ast.Name):
        return None
    if func.id in module.functions:
        return module.path, func.id
    return definition(module.path, func.id) if func.id in module.reexports else None


def _module_path(model: ScriptModel, helper: _Helper) -> Path | None:
    if helper.level:
        # ``from . import ckpt_io``: the module is the imported name itself.
        return module_file(model.path, helper.module, helper.level)
    return module_file(model.path, helper.module, 0)


def _finding(
    model: ScriptModel,
    call: ast.Call,
    helper: _Helper,
    where: _Reach | None,
    passes_state: bool,
    ctx: RuleContext,
    code: str,
) -> Finding:
    saver = f"`{helper.shown}`"
    if where is None:
        how = "how it writes it is in another module, out of xla-lens's sight"
    else:
        through = f", through {' -> '.join(where.chain)}" if len(where.chain) > 1 else ""
        how = f"it writes it with torch.save ({where.file} line {where.line}{through})"
        if len(where.chain) > 1:
            # The change belongs where torch.save is, not in the function the script calls.
            saver = f"`{where.chain[-1]}` ({where.file}, which `{helper.shown}` calls)"
    what = (
        f"checkpoint of the model's state passed to `{helper.shown}`"
        if passes_state
        else f"`{helper.shown}` builds a checkpoint of the model's state (.state_dict())"
    )
    message = (
        f"{what}: {how}. After conversion the state holds XLA tensors, and torch.save pickles "
        "them as XLA tensors: the file loads only where torch_xla is installed (or with map_location='cpu')"
    )
    if ctx.target == "legacy":
        manual = (
            f"inside {saver}, write with xm.save(data, path) (it copies to the CPU and "
            "writes on the master ordinal only) and call it on every replica: torch_xla 1.x's "
            "xm.save waits for all of them, so it must not sit under a rank check"
        )
    else:
        manual = (
            f"inside {saver}, write with xm.save(data, path) (it copies the XLA tensors "
            "to the CPU and writes on the master ordinal only), or move the tensors to the CPU "
            "before torch.save"
        )
    return Finding(code, message, model.span(call), Severity.WARNING, manual=manual)
