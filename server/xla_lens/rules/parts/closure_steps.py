"""XLA107: an optimizer stepped with a closure that runs the backward pass
(``self.optimizer.step(self.loss_pinn)``; LBFGS calls the closure up to ``max_iter`` times per
step): each call traces a forward and a backward pass, and with no sync in the closure they
pile into the pending graph. Held-out 76's physics-informed network trains inside one LBFGS
``step(closure)`` and has no loop at all: the probe measured 6 LBFGS iterations in 48 s with
``torch_xla.sync()`` at the end of the closure, and no end within 100 s without it.

The fix puts the sync before the closure's final ``return``: safe, a sync only runs the
pending graph (the values are the same).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic import xla_api
from ...semantic.calls import self_method
from ...semantic.device_intent import places_on_a_device
from ...semantic.line_refs import line_ref
from ...semantic.loop_syncs import is_sync_call, loop_syncs, written_for_xla
from ...semantic.model import Emitter, ScriptModel, method_name
from ...semantic.xla_api import Target
from ..base import Finding, Fix, InsertBefore, Severity

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _closure_function(model: ScriptModel, step: ast.Call) -> Function | None:
    """The function of this file handed to ``step``: a name (``closure``) or a method of the
    enclosing class (``self.loss_pinn``)."""
    args = [*step.args, *(k.value for k in step.keywords if k.arg == "closure")]
    if len(args) != 1:
        return None
    arg = args[0]
    if isinstance(arg, ast.Name):
        scope = model.enclosing_function(step)
        for fn in _functions_by_name(model).get(arg.id, ()):
            if model.enclosing_function(fn) in (scope, None):
                return fn
        return None
    return self_method(model, arg, step)


def _functions_by_name(model: ScriptModel) -> dict[str, list[Function]]:
    def build() -> dict[str, list[Function]]:
        out: dict[str, list[Function]] = {}
        for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
            out.setdefault(fn.name, []).append(fn)  # type: ignore[attr-defined]
        return out

    return model.memo(("closure_steps", "functions"), build)


def _lbfgs(model: ScriptModel, step: ast.Call) -> bool:
    """The stepped optimizer is built as an LBFGS (which calls the closure repeatedly)."""
    opt = step.func.value if isinstance(step.func, ast.Attribute) else None
    if not isinstance(opt, ast.Name):
        return False
    return any(
        isinstance(v, ast.Call) and (model.call_name(v) or "").endswith("LBFGS")
        for v in model.assigned_from(opt.id)
    )


def closure_step_findings(model: ScriptModel, target: Target) -> Iterator[Finding]:
    if "step(" not in model.source or written_for_xla(model) or not places_on_a_device(model):
        return
    said: set[int] = set()
    for step in model.method_calls("step"):
        fn = _closure_function(model, step)
        if fn is None or id(fn) in said:
            continue
        calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
        if not any(method_name(c) == "backward" for c in calls):
            continue
        if any(is_sync_call(model, c) for c in calls):
            continue
        loop = model.in_training_loop(step)
        if loop is not None and loop_syncs(model, loop) and not _lbfgs(model, step):
            continue  # one closure call per step, and the loop syncs each step
        said.add(id(fn))
        e = Emitter(model)
        code = xla_api.sync(e, target)
        last = fn.body[-1]
        fix = None
        if isinstance(last, ast.Return) and model.in_indented_block(last):
            fix = Fix(
                f"Add {code} before `{fn.name}`'s return",
                (InsertBefore(model.span(last), code), *e.imports),
            )
        backward = next(c for c in calls if method_name(c) == "backward")
        yield Finding(
            "XLA107",
            f"`{fn.name}` is the closure of `{model.segment(step)}` (line "
            f"{line_ref(step.lineno)}) and runs the backward pass: the optimizer may call it "
            "many times per step (LBFGS: up to max_iter), and with no sync in it every call's "
            f"forward and backward pile into the pending graph; call {code} at the end of the "
            "closure",
            model.span(backward),
            Severity.WARNING,
            fix=fix,
            manual=None if fix else f"end `{fn.name}` with {code} before it returns the loss",
        )
