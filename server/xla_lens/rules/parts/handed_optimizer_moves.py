"""XLA109 at a move of a module handed in beside an optimizer, when no caller in sight says
how that optimizer was built (held-out 47's spoter2: ``BaseTrainer.__init__(self, model,
optimizer, ...)`` runs ``self.model = model.to(self.device)``, and the entry script, through a
subclass, hands it an AdamW built from the CPU model). Converted, the move makes new Parameter
objects and the optimizer keeps the CPU ones: the first step of its GradScaler fails ("No inf
checks were recorded"), without one the weights never change (measured by the probe).

Callers in this file are XLA109's own analysis (``stale_optimizers``), callers in other files
``caller_stale_optimizers``': this part speaks only when neither can see a call."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.handed_optimizers import (
    callable_name,
    callers_here,
    earlier_optimizer,
    strands_handed_optimizer,
)
from ...semantic.line_refs import line_ref
from ...semantic.model import ScriptModel
from ...semantic.optimizer_events import moves_to_a_device
from ...semantic.workspace_callers import imported_elsewhere, workspace_callers
from ..base import Finding, Severity


def _called_in_sight(model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if callers_here(model, fn):
        return True
    if model.path and not model.path.startswith("<") and imported_elsewhere(model):
        return any(caller.lines for caller in workspace_callers(model, callable_name(model, fn)))
    return False


def handed_optimizer_moves(model: ScriptModel, code: str) -> Iterator[Finding]:
    if "optim" not in model.source and "opt" not in model.source:
        return
    reported: set[int] = set()
    for call in model.calls:
        fn = model.enclosing_function(call)
        if fn is None or id(fn) in reported or not moves_to_a_device(model, call):
            continue
        optimizer = strands_handed_optimizer(model, fn, call)
        if optimizer is None:
            continue
        if _called_in_sight(model, fn):  # type: ignore[arg-type]
            continue
        name = callable_name(model, fn)  # type: ignore[arg-type]
        reported.add(id(fn))
        moved = model.segment(call.func.value)  # type: ignore[attr-defined]
        yield Finding(
            code,
            f"`{model.segment(call)}` moves the `{moved}` that `{name}()` is handed, beside "
            f"the optimizer `{optimizer}` it is handed too: if the caller built that "
            f"optimizer from `{moved}`'s parameters, on XLA the move creates new Parameter "
            "objects, so the optimizer updates stale CPU tensors and the model never trains "
            "(no caller in this workspace shows how it was built)",
            model.span(call),
            Severity.WARNING,
            manual=f"Move `{moved}` to the device before the caller builds the optimizer (this "
            f"move then keeps its Parameters), or build the optimizer in `{fn.name}()` after "  # type: ignore[union-attr]
            "the move.",
        )


def derived_parameter_builds(model: ScriptModel, code: str) -> Iterator[Finding]:
    """An optimizer built from parameters that come from a module (its submodules through
    lists, loops and parameter-group dicts) before the module moves to the device, where the
    event analysis cannot pair them (held-out 49's semseg: ``SGD(params_list)`` on line 140,
    then ``DistributedDataParallel(model.cuda())``; the converted model never trained,
    measured by the probe). Reported at the build, no fix: the move must go first."""
    if "optim" not in model.source:
        return
    reported: set[int] = set()
    for call in model.calls:
        if not moves_to_a_device(model, call):
            continue
        build = earlier_optimizer(model, call)
        if build is None or id(build) in reported:
            continue
        reported.add(id(build))
        moved = model.segment(call.func.value)  # type: ignore[attr-defined]
        yield Finding(
            code,
            f"optimizer built from parameters that come from `{moved}` before "
            f"`{model.segment(call)}` (line {line_ref(call.lineno)}) moves it to the device: on "
            "XLA the move creates new Parameter objects, so this optimizer updates stale CPU "
            "tensors and the model never trains",
            model.span(build),
            Severity.ERROR,
            manual=f"Move `{moved}` to the device before building the optimizer (the later "
            "move then keeps its Parameters).",
            related=((model.span(call), "the model moves to the device here"),),
        )
