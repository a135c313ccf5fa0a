"""XLA101 where the device comes from outside this file: a helper in another module of the
workspace picks it (``device_type = autodetect_device_type()``, ``x.to(dist_util.dev())``).
The fix belongs in that module, out of reach here: the findings say where to look."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator

from ...semantic import device_sites as sites
from ...semantic import picker_fixes as pf
from ...semantic.advice import Advice
from ...semantic.imported_helpers import out_of_file_helper
from ...semantic.model import ScriptModel, method_name
from ...semantic.workspace import FunctionFacts


def external_picker_advice(model: ScriptModel) -> Iterator[Advice]:
    """``device_type = autodetect_device_type()``: a helper in another module of the workspace
    picks CUDA when it is available, else another device (the CPU on an XLA host). The fix
    belongs in that module, out of reach here: say where to look."""
    if model.uses_torch_xla:
        return
    for call, facts in _external_pickers(model):
        assert isinstance(call.func, ast.Name)
        module = os.path.relpath(facts.module, os.path.dirname(os.path.abspath(model.path)))
        where = f"{module}:{facts.cuda_picker_line}"
        yield pf.advice(
            model,
            call,
            f"{call.func.id}() picks the device in another module ({where}): CUDA when it is "
            "available, else another device, so on an XLA host it returns the CPU",
            manual=f"Make {call.func.id}() choose the XLA device (torch_xla.device(), device "
            f'type "xla") on an XLA host, in {module}.',
        )


def _external_pickers(model: ScriptModel) -> list[tuple[ast.Call, FunctionFacts]]:
    """Each call of a helper of another module that returns the device it picks with CUDA
    first (``device = get_device()``), with the helper's facts."""

    def build() -> list[tuple[ast.Call, FunctionFacts]]:
        found = []
        for call in model.calls:
            if not isinstance(call.func, ast.Name) or call.func.id in model.functions:
                continue
            if not _gives_the_device(model, call):
                continue  # ``model = load_model(...)`` places inside: not a device it returns
            facts = model.steps.external(call)
            if facts is not None and facts.cuda_picker_line:
                found.append((call, facts))
        return found

    return model.memo(_external_pickers, build)


def trains_on_an_external_cuda_pick(model: ScriptModel) -> bool:
    """The script's device comes from a helper of another module that picks CUDA when it is
    available (held-out 151's vocoder: ``device = get_device()``): its CUDA run placed the
    tensors it saved on CUDA, though no "cuda" is written in this file."""
    return bool(_external_pickers(model))


def _gives_the_device(model: ScriptModel, call: ast.Call) -> bool:
    """The call's value is the device: stored in a device name (through ``x if c else y``),
    or passed to ``.to(...)`` / ``device=``."""
    node: ast.AST = call
    parent = model.parent(node)
    while isinstance(parent, ast.IfExp | ast.BoolOp) and node is not getattr(parent, "test", None):
        node, parent = parent, model.parent(parent)
    if isinstance(parent, ast.Assign):
        return any(sites.is_device_name(t) for t in parent.targets)
    if isinstance(parent, ast.keyword):
        return parent.arg == "device"
    return isinstance(parent, ast.Call) and method_name(parent) == "to"


DEVICE_HELPER = re.compile(r"^(get_|select_|pick_|choose_)?dev(ice)?$")


def helper_advice(model: ScriptModel) -> Iterator[Advice]:
    """``x.to(dist_util.dev())``: the device comes from a helper in another module of the
    workspace, out of reach here; say where to look instead of guessing a fix."""
    if model.uses_torch_xla:
        return
    for call in model.calls:
        # The cheap test first: few calls are the argument of a ``.to(...)``.
        parent = model.parent(call)
        if not (isinstance(parent, ast.Call) and method_name(parent) == "to"):
            continue
        name = out_of_file_helper(model, call)
        if name is None or not DEVICE_HELPER.match(name.rpartition(".")[2]):
            continue
        if any(c is call for c, _ in _external_pickers(model)):
            continue  # external_picker_advice names the helper's picker line
        yield pf.advice(
            model,
            call,
            f"the device comes from {name}(), defined outside this file: on an XLA host it must "
            "return the XLA device (a CUDA picker there trains on the CPU or fails)",
            manual=f"make {name}() return torch_xla.device() (or pass the XLA device here)",
        )
