"""Where a script means to train: on CUDA (a conversion moves it), on the XLA device already,
on no device at all, or as a script written for torch_xla by hand.

Several rules only speak to a script that a conversion moves onto an accelerator. That
judgement must not flip when another rule's fix is applied first: XLA101 turns the CUDA
picker into ``torch_xla.device()`` and adds ``import torch_xla``, and a finding that needed
"CUDA evidence" or "no torch_xla yet" would then vanish in the editor although nothing it
reports was fixed. So:

- ``being_converted``: the script places work on CUDA, *or* on the XLA device without an
  XLA training loop yet (what XLA101's fix leaves behind counts like the CUDA it replaced);
- ``hand_written_xla``: the script uses torch_xla API that xla-lens's own fixes never write
  (metrics, SPMD sharding, test utilities, rendezvous...). Only such a script was written for
  XLA by a person who chose its seeding and output; a script whose torch_xla calls are all of
  the kind the fixes emit is judged as a script still being converted, whatever fixes ran;
- ``places_on_a_device``: anything at all in the script chooses a device (``.to(...)``,
  ``.cuda()``, ``device=``, a device string, ``torch.device``, a framework that places for it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from functools import cached_property

from .diskread import read_regular
from .frameworks import ownership
from .injected_xla import injected_xla_calls
from .model import ScriptModel
from .node_helpers import is_cuda_string, method_name
from .workspace import MAX_BYTES, module_file

CUDA_PREFIXES = ("torch.cuda.", "torch.accelerator.")
XLA_DEVICE_CALLS = frozenset(
    {"torch_xla.device", "torch_xla.core.xla_model.xla_device", "torch_xla.runtime.xla_device"}
)
XLA_DEVICE_STRING = re.compile(r"^xla(:\d+)?$")

# Every torch_xla module and name that an xla-lens fix writes (semantic/xla_api.py and the
# rules' own imports). Keep in step with the fixes: a fix that writes a name missing here
# would make the script look hand-written for XLA and silence the rules that read this.
EMITTED_MODULES = frozenset(
    {
        "torch_xla",
        "torch_xla.core.xla_model",
        "torch_xla.runtime",
        "torch_xla.distributed.parallel_loader",
        "torch_xla.distributed.xla_multiprocessing",
        "torch_xla.distributed.xla_backend",
        "torch_xla.amp",
        "torch_xla.amp.syncfree",
    }
)
EMITTED_NAMES = frozenset(
    {
        "torch_xla.device",
        "torch_xla.sync",
        "torch_xla.launch",
        "torch_xla.manual_seed",
        "torch_xla.core.xla_model.xla_device",
        "torch_xla.core.xla_model.mark_step",
        "torch_xla.core.xla_model.xrt_world_size",
        "torch_xla.core.xla_model.get_ordinal",
        "torch_xla.core.xla_model.get_local_ordinal",
        "torch_xla.core.xla_model.optimizer_step",
        "torch_xla.core.xla_model.set_rng_state",
        "torch_xla.core.xla_model.save",
        "torch_xla.core.xla_model.master_print",
        "torch_xla.core.xla_model.is_master_ordinal",
        "torch_xla.core.xla_model.add_step_closure",
        "torch_xla.core.xla_model.reduce_gradients",
        "torch_xla.core.xla_model.all_reduce",
        "torch_xla.core.xla_model._fetch_gradients",
        "torch_xla.runtime.world_size",
        "torch_xla.runtime.global_ordinal",
        "torch_xla.runtime.local_ordinal",
        "torch_xla.distributed.parallel_loader.MpDeviceLoader",
        "torch_xla.distributed.xla_multiprocessing.spawn",
        "torch_xla.amp.autocast",
        "torch_xla.amp.GradScaler",
        "torch_xla.amp.syncfree.SGD",
        "torch_xla.amp.syncfree.Adam",
        "torch_xla.amp.syncfree.AdamW",
    }
)

# ``.to(torch.float32)`` / ``.to(dtype=...)`` changes the dtype only, not the device.
DTYPE_NAMES = frozenset(
    {
        "float",
        "float16",
        "float32",
        "float64",
        "double",
        "half",
        "bfloat16",
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "long",
        "short",
        "bool",
        "complex64",
        "complex128",
    }
)
DTYPE_ONLY_KEYWORDS = frozenset({"dtype", "non_blocking", "copy", "memory_format"})
PLACING_METHODS = frozenset({"cuda", "xpu", "mps", "npu", "hpu", "ipu"})
PLACING_KEYWORDS = frozenset({"device", "device_ids", "output_device", "device_map"})
# Calls that choose where tensors live without naming a device string.
PLACING_CALLS = frozenset(
    {"torch.device", "torch.set_default_device", "torch.set_default_tensor_type"}
)
OTHER_ACCELERATOR_PREFIXES = ("torch.mps.", "torch.xpu.", "torch.backends.mps.")
OTHER_DEVICE_STRING = re.compile(r"^(mps|xpu|npu|hpu|ipu|meta)(:\d+)?$")


def runs_on_cuda(model: ScriptModel) -> bool:
    """The original places work on CUDA (or torch.accelerator's device): the conversion then
    moves it to the XLA device."""
    for call in model.calls:
        name = model.call_name(call) or ""
        if name.startswith(CUDA_PREFIXES) or method_name(call) == "cuda":
            return True
    return any(is_cuda_string(n) for n in model.nodes_of(ast.Constant, ast.JoinedStr))


CUDA_PLACING_CALLS = frozenset({"torch.cuda.set_device", "torch.cuda.device"})


def places_on_cuda(model: ScriptModel) -> bool:
    """``.cuda()``, a CUDA device string or ``torch.cuda.set_device``: the script puts tensors
    on CUDA (``torch.cuda.manual_seed_all`` in a script written for XLA does not)."""
    for call in model.calls:
        if method_name(call) == "cuda" or (model.call_name(call) or "") in CUDA_PLACING_CALLS:
            return True
    return any(is_cuda_string(n) for n in model.nodes_of(ast.Constant, ast.JoinedStr))


def _is_xla_string(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(XLA_DEVICE_STRING.match(node.value))
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        return (
            isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and first.value.startswith("xla:")
        )
    return False


def uses_xla_device(model: ScriptModel) -> bool:
    """``torch_xla.device()``, ``xm.xla_device()`` or an ``"xla"`` device string."""
    if any(True for _ in model.calls_to(*XLA_DEVICE_CALLS)):
        return True
    return any(_is_xla_string(n) for n in model.nodes_of(ast.Constant, ast.JoinedStr))


def _emitted(qualname: str) -> bool:
    if qualname in EMITTED_NAMES or qualname in EMITTED_MODULES:
        return True
    module, _, _ = qualname.rpartition(".")
    # ``torch_xla.amp.syncfree.AdamW`` and friends, attributes of an emitted call's result.
    return module in EMITTED_MODULES and module != "torch_xla" and module.count(".") >= 2


def uses_torch_xla_beyond(model: ScriptModel, emitted: Callable[[str], bool]) -> bool:
    """An import or call of torch_xla API that ``emitted`` does not count as the fixes' own."""
    for target in model.imports.values():
        if target.split(".")[0] == "torch_xla" and not emitted(target):
            return True
    for call in model.calls:
        name = model.call_name(call)
        if name is not None and name.split(".")[0] == "torch_xla" and not emitted(name):
            return True
    return False


class _Intent:
    def __init__(self, model: ScriptModel) -> None:
        self.model = model

    @cached_property
    def hand_written_xla(self) -> bool:
        # A torch_xla module handed in as a parameter (``def _mp_fn(rank, cfg, xm)``, held-out
        # 150's deeptrane) is no fix's doing: the caller wrote for XLA.
        return (
            bool(self.model.handed_modules)
            or uses_torch_xla_beyond(self.model, _emitted)
            or bool(injected_xla_calls(self.model))
        )

    @cached_property
    def places_on_a_device(self) -> bool:
        model = self.model
        if model.uses_trainer or ownership(model).framework is not None:
            return True  # the framework places the model and the batches itself
        for call in model.calls:
            name = model.call_name(call) or ""
            if (
                name in PLACING_CALLS
                or name.startswith(CUDA_PREFIXES + OTHER_ACCELERATOR_PREFIXES)
                or (name.split(".")[0] == "torch_xla" and name not in NON_PLACING_XLA)
            ):
                return True
            method = method_name(call)
            if method in PLACING_METHODS or (method == "to" and not _dtype_only(model, call)):
                return True
            if any(kw.arg in PLACING_KEYWORDS for kw in call.keywords):
                return True
        for node in model.nodes_of(ast.Constant, ast.JoinedStr):
            if is_cuda_string(node) or _is_xla_string(node):
                return True
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if OTHER_DEVICE_STRING.match(node.value):
                    return True
        return False


# torch_xla calls the fixes add to a script that places nothing (the sync, a step closure,
# the seed, the optimizer step): they do not move anything to the device.
NON_PLACING_XLA = frozenset(
    {
        "torch_xla.sync",
        "torch_xla.manual_seed",
        "torch_xla.core.xla_model.mark_step",
        "torch_xla.core.xla_model.add_step_closure",
        "torch_xla.core.xla_model.optimizer_step",
        "torch_xla.core.xla_model.set_rng_state",
        "torch_xla.core.xla_model.master_print",
        "torch_xla.core.xla_model.save",
    }
)


def _dtype_only(model: ScriptModel, call: ast.Call) -> bool:
    if any(kw.arg not in DTYPE_ONLY_KEYWORDS for kw in call.keywords):
        return False
    for arg in call.args:
        name = model.qualname(arg)
        if name is None or not (name.startswith("torch.") and name[6:] in DTYPE_NAMES):
            return False
    return True


# A sibling module that places something (its own ``.cuda()``, ``.to(...)``, ``device=``).
SIBLING_PLACEMENT = re.compile(rb"\.(cuda|to)\(|\bdevice\s*=|torch\.device\(|set_default_device")


def _import_origin(model: ScriptModel, local: str) -> tuple[str, int] | None:
    """``(module, level)`` of the import that binds ``local`` (``from .nets import Net``,
    ``import nets``)."""
    for node in model.nodes_of(ast.ImportFrom, ast.Import):
        for alias in node.names:  # type: ignore[attr-defined]
            bound = alias.asname or alias.name.split(".")[0]
            if bound != local:
                continue
            if isinstance(node, ast.ImportFrom):
                return node.module or "", node.level
            return alias.name, 0
    return None


def built_where_placed(model: ScriptModel, call: ast.Call) -> bool:
    """``call`` builds an object from a sibling module of this script (read from disk, never
    imported) whose code places something on a device itself: the model may be moved
    there (``Net.__init__`` calling ``self.cuda()``, ``build_model()`` returning
    ``model.to(device)``)."""
    root = call.func
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    origin = _import_origin(model, root.id)
    if origin is None:
        return False
    path = module_file(model.path or "", *origin)
    if path is None:
        return False
    try:
        text = read_regular(path, MAX_BYTES)
    except OSError:
        return True  # cannot tell: assume it may place
    return SIBLING_PLACEMENT.search(text) is not None


def _intent(model: ScriptModel) -> _Intent:
    # One per parse: several rules ask.
    cached = getattr(model, "_xla_lens_device_intent", None)
    if cached is None:
        cached = _Intent(model)
        model._xla_lens_device_intent = cached  # type: ignore[attr-defined]
    return cached


def hand_written_xla(model: ScriptModel) -> bool:
    return _intent(model).hand_written_xla


# What makes an XLA training loop run: a sync, a device loader, the XLA optimizer step, a
# launcher, a compiled step. A script on the XLA device with none of them is half converted.
XLA_STEP_MACHINERY = frozenset(
    {
        "torch_xla.sync",
        "torch_xla.core.xla_model.mark_step",
        "torch_xla.core.xla_model.optimizer_step",
        "torch_xla.distributed.parallel_loader.MpDeviceLoader",
        "torch_xla.distributed.parallel_loader.ParallelLoader",
        "torch_xla.launch",
        "torch_xla.distributed.xla_multiprocessing.spawn",
        "torch_xla.compile",
        "torch_xla.step",
    }
)


def has_xla_step_machinery(model: ScriptModel) -> bool:
    return any(True for _ in model.calls_to(*XLA_STEP_MACHINERY))


def being_converted(model: ScriptModel) -> bool:
    """A script a conversion moves onto the XLA device and that is not finished yet: it
    still places work on CUDA, or it is on the XLA device (XLA101's fix alone gets it there)
    without anything that runs an XLA training loop. A script written for XLA by hand is not.

    Known limit: once every CUDA trace is gone *and* a sync or XLA step was added, the script
    cannot be told from one written for XLA that uses only the API the fixes emit; a rule
    reading this then goes quiet (its fix should be applied with the others, by Convert).
    """
    if hand_written_xla(model):
        return False
    on_xla = uses_xla_device(model) and has_xla_step_machinery(model)
    if runs_on_cuda(model):
        # nanoGPT-TPU (held-out 135's control): on the XLA device, synced, launched, and its
        # only CUDA trace a leftover ``if device_type == 'cuda':`` test that never holds there.
        return not (on_xla and _cuda_only_compared(model))
    return uses_xla_device(model) and not has_xla_step_machinery(model)


def _cuda_only_compared(model: ScriptModel) -> bool:
    """Every CUDA trace of the script is a ``"cuda"`` string a comparison tests: no CUDA call,
    no ``.cuda()``, no CUDA string handed anywhere."""
    for call in model.calls:
        name = model.call_name(call) or ""
        if name.startswith(CUDA_PREFIXES) or method_name(call) == "cuda":
            return False

    def compared(node: ast.AST) -> bool:
        parent = model.parent(node)
        if isinstance(parent, ast.Tuple | ast.List | ast.Set):  # ``t in ("cuda", "mps")``
            parent = model.parent(parent)
        return isinstance(parent, ast.Compare)

    return all(
        compared(n) for n in model.nodes_of(ast.Constant, ast.JoinedStr) if is_cuda_string(n)
    )


def places_on_a_device(model: ScriptModel) -> bool:
    return _intent(model).places_on_a_device


def finished_on_xla(model: ScriptModel) -> bool:
    """No CUDA trace is left, the script names the XLA device and something runs its XLA
    loop (a sync, a device loader, the XLA optimizer step, a launcher). Either written for XLA
    or fully converted: the two cannot be told apart from the text, so a rule may go quiet on
    this only where its fix would change nothing that matters (a one-device no-op) or where
    the evidence it needs is out of this file's reach."""
    return not runs_on_cuda(model) and uses_xla_device(model) and has_xla_step_machinery(model)


__all__ = [
    "being_converted",
    "built_where_placed",
    "finished_on_xla",
    "has_xla_step_machinery",
    "places_on_a_device",
    "places_on_cuda",
    "runs_on_cuda",
    "uses_xla_device",
    "hand_written_xla",
]
