"""XLA107: a function or method that runs a whole training step (backward and the optimizer
step) which no loop of this file runs and nothing in this file calls: its loop is in another
module, reached through a duck-typed call (DeepRL's ``run_steps(agent)`` looping
``agent.step()``, held-out 32). Nothing there can tell that the call trains, so the step is
said where it is written.

The fix adds the sync after the optimizer step (one per call, so one per iteration of a loop
that calls the step once) and needs review: the loop that calls it is out of reach, and if
it syncs already (or an MpDeviceLoader feeds it) the step gets a second sync; if it calls
the step several times per iteration, the graph is cut between them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic import xla_api
from ...semantic.device_intent import hand_written_xla
from ...semantic.frameworks import ownership
from ...semantic.model import Emitter, ScriptModel, method_name
from ..base import Finding, Fix, InsertAfter, Severity, Target

SYNCS = frozenset(
    {
        "torch_xla.sync",
        "torch_xla.core.xla_model.mark_step",
        "torch_xla.core.xla_model.optimizer_step",
    }
)
REVIEW = (
    "the loop that calls this step is not in this file: if it syncs each iteration already "
    "(or an MpDeviceLoader feeds it) the step gets a second sync, and if it calls the step "
    "more than once per iteration the graph is cut between the calls"
)


def _top_level(model: ScriptModel, fn: ast.AST) -> bool:
    """A module-level function, or a method of a module-level class: another module can
    call it."""
    parent = model.parent(fn)
    if isinstance(parent, ast.ClassDef):
        parent = model.parent(parent)
    return isinstance(parent, ast.Module)


def _called_here(model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``fn`` is called (or handed on) somewhere in this file outside its own body: by name,
    or as a method of its class (``self.step()``, ``agent.step()`` with ``agent =
    Agent(...)``); ``self.actor.step()`` of another object is not a call of it."""
    inside = set(map(id, ast.walk(fn)))
    owner = model.parent(fn)
    if not isinstance(owner, ast.ClassDef):
        return any(id(node) not in inside for node in model.name_nodes(fn.name))
    instances = {"self", "cls"} | {
        name
        for name in model.assignments
        if any(
            isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == owner.name
            for v in model.assigned_from(name)
        )
    }
    for call in model.method_calls(fn.name):
        if id(call) in inside:
            continue
        recv = call.func.value  # type: ignore[attr-defined]
        if isinstance(recv, ast.Name) and recv.id in instances:
            return True
        if isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name):
            if recv.func.id == owner.name:
                return True
    # Handed on as a bound method (``register(self.step)``, ``Agent.step``).
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == fn.name
        and id(node) not in inside
        and not isinstance(model.parent(node), ast.Call)
        for node in model.nodes_of(ast.Attribute)
    )


def _steps_in_body(
    model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef
) -> ast.Call | None:
    """The optimizer step of ``fn``'s own body (no loop of ``fn`` around it), when ``fn``
    also calls backward and does not sync."""
    step = None
    backward = False
    for node in model.walk_scope(fn):
        if not isinstance(node, ast.Call):
            continue
        name = model.call_name(node) or ""
        if name in SYNCS:
            return None
        method = method_name(node)
        if method == "backward":
            backward = True
        elif (
            method == "step"
            and step is None
            and (
                model.is_optimizer(node.func.value)  # type: ignore[attr-defined]
                # ``self.scaler.step(self.optimizer)``: the AMP step (ZoeDepth's
                # ``train_on_batch``, run by its base class's loop in another module).
                or (len(node.args) == 1 and model.is_optimizer(node.args[0]))
            )
        ):
            step = node
    if step is None or not backward:
        return None
    loop = model.innermost_loop(step)
    if loop is not None and any(a is fn for a in model.ancestors(loop)):
        return None  # a loop of its own: a training loop, XLA107's usual finding
    return step


def loopless_step_findings(model: ScriptModel, target: Target) -> Iterator[Finding]:
    if hand_written_xla(model) or ownership(model).framework is not None:
        return
    in_loops = {id(region) for loop in model.training_loops for region in loop.regions()} | {
        id(loop.node) for loop in model.training_loops
    }
    for fn in model.nodes_of(ast.FunctionDef, ast.AsyncFunctionDef):
        assert isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        if id(fn) in in_loops or any(id(a) in in_loops for a in model.ancestors(fn)):
            continue
        if not _top_level(model, fn):
            continue  # a nested function: its enclosing one calls it, or nothing does
        step = _steps_in_body(model, fn)
        if step is None or _called_here(model, fn):
            continue
        e = Emitter(model)
        code = xla_api.sync(e, target)
        stmt = model.enclosing_statement(step)
        fix = None
        if stmt is not None and any(stmt is s for s in fn.body):
            fix = Fix(
                f"Add {code} after the optimizer step",
                (InsertAfter(model.span(stmt), code), *e.imports),
                safe=False,
                review_reason=REVIEW,
            )
        yield Finding(
            "XLA107",
            f"{fn.name}() runs a whole training step (backward and optimizer step) and no loop "
            "in this file runs it: the loop that calls it (in another module) never marks the "
            f"step, so XLA traces one growing graph across iterations; call {code} once per "
            "step",
            model.span(step),
            Severity.WARNING,
            fix=fix,
            manual=None if fix else f"call {code} once per step, after the optimizer step",
        )
