"""XLA105: a training function whose callers, in other modules of the workspace, wrap the
model in DistributedDataParallel.

``train_one_epoch(model, ..., optimizer, ...)`` in ``legacy_train.py`` steps an optimizer
built in ``legacy_main.py`` from a model wrapped there in DDP (open_clip). Over the ``xla``
backend DDP all-reduces the gradients in backward, so the plain ``optimizer.step()`` is right
and ``xm.optimizer_step`` would all-reduce them a second time. The function is followed to
the functions of this file that lead to it, and those to their callers in the workspace
(``semantic/workspace_callers.py``): when every caller found reduces (and nothing in this
file's own top-level code calls it), the step stays as it is; when only some do, the fix
waits for review and says which caller already reduces. No caller found anywhere while the
optimizer is a parameter of the step's function: ``unseen_caller`` says why the fix waits for
review (the optimizer may be accelerate's prepared one, or one over a DDP model).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from ...semantic.model import ScriptModel
from ...semantic.params import parameter_of
from ...semantic.workspace_callers import CallerModule, workspace_callers

MAX_DEPTH = 4


def ddp_callers(model: ScriptModel, step: ast.Call) -> tuple[bool, str]:
    """(every caller already reduces the gradients, why the fix needs review or "")."""
    fn = model.enclosing_function(step)
    if fn is None or not model.path or model.path.startswith("<"):
        return False, ""
    entries, called_here = _entries(model, fn)
    callers: list[tuple[str, CallerModule]] = []
    for entry in entries:
        if isinstance(model.parent(entry), ast.Module):
            callers += [(entry.name, c) for c in workspace_callers(model, entry.name)]
    reducing = [(name, c) for name, c in callers if c.reducer]
    if not reducing:
        return False, ""
    if len(reducing) == len(callers) and not called_here:
        return True, ""
    name, caller = reducing[0]
    where = _shown(model.path, caller.path)
    lines = ", ".join(str(line) for line in caller.lines)
    return False, (
        f"`{name}()` is also called from {where} (line {lines}), which wraps the model in "
        f"{caller.reducer}: over the xla backend it already all-reduces the gradients in "
        "backward, so xm.optimizer_step would all-reduce them a second time for that caller"
    )


def unseen_caller(model: ScriptModel, step: ast.Call) -> str:
    """Why the fix needs review when the stepped optimizer is a parameter of the step's
    function and nothing shows what it is: no call of that function in this file, and no
    module of the workspace folders searched calls it (1d-tokenizer's ``utils/train_utils.py``,
    called from ``scripts/train.py``, out of reach). The optimizer may then be accelerate's
    prepared one, whose ``step()`` already all-reduces on XLA, or one over a DDP-wrapped
    model. "" when the optimizer or its caller is visible."""
    opt = step.func.value if isinstance(step.func, ast.Attribute) else None
    fn = model.enclosing_function(step)
    if not isinstance(opt, ast.Name) or fn is None:
        return ""
    param = parameter_of(model, opt)
    if param is None or param[0] is not fn:
        return ""
    if any(model.steps.callee(c) is fn for c in model.calls) or _method_called_here(model, fn):
        return ""  # called here: what it is given is this file's business (or unreadable)
    if isinstance(model.parent(fn), ast.Module) and workspace_callers(model, fn.name):
        return ""  # a caller is known: ddp_callers judged it
    return (
        f"the optimizer comes from the caller (`{opt.id}` is a parameter of `{fn.name}()`, "
        "and no caller of it is visible in this file, its folder or the folders beside its "
        "package): if it is an "
        "accelerate-prepared optimizer (its step() already all-reduces on XLA) or one over a "
        "DDP-wrapped model, xm.optimizer_step would all-reduce the gradients a second time; "
        "keep optimizer.step() then"
    )


def _method_called_here(model: ScriptModel, fn: ast.AST) -> bool:
    """``fn`` is a method of a class of this file and the file calls it on an instance
    (``model = DeepFM(...)`` then ``model.fit(loader, val, optimizer)``, held-out 178) or on
    ``self``."""
    owner = model.parent(fn)
    if not isinstance(owner, ast.ClassDef) or not isinstance(fn, ast.FunctionDef):
        return False
    for call in model.calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == fn.name):
            continue
        recv = func.value
        if isinstance(recv, ast.Name) and (
            recv.id == "self" or any(_builds(v, owner.name) for v in model.assigned_from(recv.id))
        ):
            return True
    return False


# Module methods that return the module: ``Net().to(device)`` is still a ``Net``.
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "half", "double"})


def _builds(value: ast.AST, cls: str) -> bool:
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _SAME_MODULE
    ):
        value = value.func.value
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == cls


def callers_of_entries(model: ScriptModel, fn: ast.AST) -> list[CallerModule] | None:
    """The workspace modules that call ``fn`` or a function of this file whose calls lead to
    it (``get_loss`` <- ``train`` <- main.py: Chinese-CLIP, held-out 84); None when this
    module's own top-level code calls one of them."""
    entries, called_here = _entries(model, fn)
    if called_here:
        return None
    return [
        c
        for entry in entries
        if isinstance(entry, ast.FunctionDef | ast.AsyncFunctionDef)
        and isinstance(model.parent(entry), ast.Module)
        for c in workspace_callers(model, entry.name)
    ]


def _entries(model: ScriptModel, fn: ast.AST) -> tuple[list[ast.AST], bool]:
    """``fn`` and the functions of this file whose calls lead to it; whether the module's
    own top-level code calls one of them."""
    entries, frontier, called_here = [fn], [fn], False
    for _ in range(MAX_DEPTH):
        found: list[ast.AST] = []
        for call in model.calls:
            if model.steps.callee(call) not in frontier:
                continue
            outer = model.enclosing_function(call)
            if outer is None:
                called_here = True
            elif outer not in entries and outer not in found:
                found.append(outer)
        if not found:
            break
        entries += found
        frontier = found
    return entries, called_here


def _shown(script: str, path: Path) -> str:
    try:
        return os.path.relpath(path, Path(script).resolve().parent)
    except (OSError, ValueError):
        return str(path)
