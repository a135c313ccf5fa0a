"""State dicts written with safetensors while their tensors are on the XLA device (XLA108).

diffusers' ``Pipeline.save_lora_weights(..., unet_lora_layers=state)`` and safetensors'
``save_file(state, path)`` / ``save_model(module, path)`` read each tensor's storage pointer,
which XLA tensors do not have: ``RuntimeError: Attempted to access the data pointer on an
invalid python storage`` (measured, safetensors 0.8 + torch_xla 2.9; a ``{k: v.cpu() ...}`` copy
writes). The state is on the XLA device when it comes from a module accelerate prepared (it
places the model on XLA when it runs there: diffusers' LoRA examples, held-out 37), from the
models accelerate hands a ``register_save_state_pre_hook`` hook, or from a module the script
moves to its device once that device is XLA. No fix: where the copy belongs (and on which
process the file is written) depends on the library call.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.device_intent import being_converted
from ...semantic.model import ScriptModel, dotted, method_name, receiver
from ...semantic.prepared_loaders import is_accelerator
from ..base import Finding, Severity
from .trainer_model_saves import moved_roots

WRITERS = frozenset({"safetensors.torch.save_file", "safetensors.torch.save_model"})
WRITER_METHODS = frozenset({"save_lora_weights"})
# Calls whose result is (a conversion of) the state of the module they are given.
STATE_OF_ARGUMENT = ("get_peft_model_state_dict", "convert_state_dict_to_diffusers")
UNWRAPS = ("unwrap_model",)
PREPARE_METHODS = frozenset({"prepare", "prepare_model"})


def safetensors_state_saves(model: ScriptModel, code: str) -> Iterator[Finding]:
    source = model.source
    if "save_lora_weights" not in source and "safetensors" not in source:
        return  # the cheap test first
    writes = [
        c for c in model.calls if model.call_name(c) in WRITERS or method_name(c) in WRITER_METHODS
    ]
    if not writes:
        return
    on_device = _prepared_roots(model)
    if being_converted(model):
        on_device |= moved_roots(model)
    if not on_device:
        return
    for call in writes:
        for value in (*call.args, *(k.value for k in call.keywords)):
            root = _module_of_state(model, value, call)
            if root is None or root not in on_device:
                continue
            shown = model.segment(call.func)
            yield Finding(
                code,
                f"`{shown}(...)` writes the state of `{root}` with safetensors, which cannot "
                "read XLA tensors (RuntimeError: 'Attempted to access the data pointer on an "
                "invalid python storage', measured): on XLA that state is on the device",
                model.span(call),
                Severity.WARNING,
                manual="Hand it a CPU copy, `{k: v.cpu() for k, v in state.items()}`, and write "
                "it from one process only.",
            )
            break


def _module_of_state(model: ScriptModel, value: ast.AST, at: ast.AST, depth: int = 0) -> str | None:
    """The name of the module whose state ``value`` is (``get_peft_model_state_dict(unet)``,
    ``model.state_dict()``, a local name bound to one), or None."""
    if depth > 5:
        return None
    if isinstance(value, ast.Call):
        name = model.call_name(value) or dotted(value.func) or ""
        if name.endswith(STATE_OF_ARGUMENT) and value.args:
            return _module_of_state(model, value.args[0], at, depth + 1)
        if name.endswith(UNWRAPS) and value.args:
            return _module_of_state(model, value.args[0], at, depth + 1)
        if method_name(value) == "state_dict":
            return _module_name(receiver(value))
        return None
    if isinstance(value, ast.Name):
        scope = model.enclosing_function(at)
        for assign in model.assignments.get(value.id, ()):
            if assign.value is None or model.enclosing_function(assign) is not scope:
                continue
            found = _module_of_state(model, assign.value, at, depth + 1)
            if found is not None:
                return found
        # ``get_peft_model_state_dict(model)`` with ``model`` the loop variable over a hook's
        # ``models``: the module is the name itself.
        return value.id if depth else None
    return None


def _module_name(node: ast.AST | None) -> str | None:
    path = dotted(node) if node is not None else None
    return path.split(".")[0] if path else None


def _prepared_roots(model: ScriptModel) -> set[str]:
    """Names bound to what ``accelerator.prepare(...)`` returns, and the models accelerate
    hands a save-state hook (its first parameter and the loop variables over it)."""
    out: set[str] = set()
    for call in model.calls:
        method = method_name(call)
        if method in PREPARE_METHODS and is_accelerator(model, receiver(call)):
            stmt = model.parent(call)
            if isinstance(stmt, ast.Assign) and stmt.value is call:
                for target in stmt.targets:
                    elts = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
                    out.update(e.id for e in elts if isinstance(e, ast.Name))
        elif method == "register_save_state_pre_hook" and call.args:
            hook = call.args[0]
            if isinstance(hook, ast.Name):
                out.update(_hook_models(model, hook.id))
    return out


def _hook_models(model: ScriptModel, name: str) -> set[str]:
    out: set[str] = set()
    for fn in model.nodes_of(ast.FunctionDef):
        assert isinstance(fn, ast.FunctionDef)
        if fn.name != name or not fn.args.args:
            continue
        models = fn.args.args[0].arg
        out.add(models)
        for node in model.walk_scope(fn):
            if (
                isinstance(node, ast.For)
                and isinstance(node.iter, ast.Name)
                and node.iter.id == models
                and isinstance(node.target, ast.Name)
            ):
                out.add(node.target.id)
    return out
