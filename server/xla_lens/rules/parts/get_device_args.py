"""XLA101: ``device=x.get_device()`` / ``.to(x.get_device())`` (FastPitch's
``binarize_attention``, held-out 39). ``get_device()`` is the CUDA index of the tensor's device;
on an XLA tensor it is 0, and ``device=0`` means cuda:0: ``RuntimeError: Found no NVIDIA driver``
(measured on torch_xla 2.9). ``x.device`` names the device itself.

Safe: on CUDA ``x.device`` is ``cuda:N`` for the index N that ``get_device()`` gives, so the
placement is the same; on the CPU (``get_device()`` is -1) the original raised. Only where the
index is a device argument: other uses read the number. Not on a receiver named for a module
(``model``, ``self.net``), on an imported name (VAR's ``dist.get_device()``, its own module's
function) or in a file that defines its own ``get_device``: nanochat's GPT has a
``get_device()`` method that returns a device, and ``model.device`` would not exist.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.model import ScriptModel, dotted, keyword, method_name, receiver
from ..base import Finding, Fix, Replace, Severity

PLACING = frozenset({"to"})


def get_device_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    if "get_device" not in model.source or "def get_device" in model.source:
        return  # the script's own ``get_device`` method may return a device already
    for call in model.method_calls("get_device"):
        tensor = receiver(call)
        if tensor is None or call.args or call.keywords or not _as_device(model, call):
            continue
        if _names_a_module(tensor):
            continue  # nanochat's ``model.get_device()`` (its GPT's method returns a device)
        if _imported_name(model, tensor):
            continue  # VAR's ``dist.get_device()``: its own module's function (a device)
        shown = model.segment(tensor)
        yield Finding(
            code,
            f"`{shown}.get_device()` is the CUDA index of `{shown}`'s device: on XLA it is 0, "
            "and as a device 0 means cuda:0 ('Found no NVIDIA driver', measured); "
            f"`{shown}.device` names the device itself",
            model.span(call),
            Severity.WARNING,
            fix=Fix(f"Use {shown}.device", (Replace(model.span(call), f"{shown}.device"),)),
        )


MODULE_WORDS = ("model", "net", "module", "network", "policy", "encoder", "decoder", "self")


def _names_a_module(node: ast.AST) -> bool:
    """``model``, ``self.net``, ``gen_model``: a module (or object) whose ``get_device`` may be
    its own method; only tensors are sure to mean the torch one."""
    text = (dotted(node) or "").lower()
    last = text.rpartition(".")[2]
    return not text or text.split(".")[0] == "self" or last.endswith(MODULE_WORDS)


def _imported_name(model: ScriptModel, node: ast.AST) -> bool:
    """A module (or anything) the script imports under that name (held-out 55, VAR's
    ``from utils import dist`` then ``dist.get_device()``, which returns the device): only a
    tensor's ``get_device()`` is the CUDA index."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and root.id in model.imports


def _as_device(model: ScriptModel, call: ast.Call) -> bool:
    parent = model.parent(call)
    if isinstance(parent, ast.keyword) and parent.arg == "device":
        return True
    if isinstance(parent, ast.Call) and method_name(parent) in PLACING:
        return bool(parent.args) and parent.args[0] is call and keyword(parent, "device") is None
    return False
