"""Which loops of a script are training-step loops, and which nodes run in each step.

A training-step loop is the innermost loop that runs a step (``backward()``, an optimizer
or scaler ``step``, ``xm.optimizer_step``), directly or through a step function of this
script or of a sibling module (``semantic/steps.py`` classifies those). Two kinds of loop
that contain a step are not one: a gradient-accumulation loop (it only runs ``backward()``
while the code around it updates the parameters) and a loop over a literal list of variants
inside the step loop (its iteration, and its sync, belong to the enclosing loop).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .loop_exits import leaves_after
from .node_helpers import LOOP_TYPES, SCOPE_TYPES, dotted, node_order
from .steps import ExternalStep, is_update_call

if TYPE_CHECKING:
    from .model import ScriptModel


@dataclass
class TrainingLoop:
    node: ast.For | ast.While | ast.AsyncFor
    # Functions defined in this script that the loop calls and that run the step
    # (their bodies count as "inside the loop").
    step_functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=list)
    # Step functions of sibling modules the loop calls (their bodies are not in this file).
    external_steps: list[ExternalStep] = field(default_factory=list)
    # The calls in the loop that run the step (directly or through a step function).
    step_calls: list[ast.Call] = field(default_factory=list)

    def regions(self) -> list[ast.AST]:
        return [self.node, *self.step_functions]


def _loop_running_nested(
    model: ScriptModel, call: ast.Call
) -> tuple[
    ast.For | ast.While | ast.AsyncFor | None, ast.FunctionDef | ast.AsyncFunctionDef | None
]:
    """``for itr, batch in enumerate(loader): def train_step(): ... loss.backward() ...`` then
    ``gpu_timer(train_step)`` (or ``train_step()``) in the same body: the function defined in
    the loop runs there every iteration (I-JEPA's src/train.py, held-out 30). The loop and that
    function, or (None, None)."""
    fn = model.enclosing_function(call)
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return None, None
    loop = model.innermost_loop(fn)
    if loop is None:
        return None, None
    for stmt in loop.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id == fn.name and isinstance(n.ctx, ast.Load):
                return loop, fn
    return None, None


def find_training_loops(model: ScriptModel) -> list[TrainingLoop]:
    """Innermost loops that run a training step, in source order: the step is in the
    loop, in a step function or method it calls, or in a sibling module's step function.
    Loops that call an epoch function (which loops over the steps itself) are not."""
    steps = model.steps
    found: dict[ast.AST, TrainingLoop] = {}
    for call in model.calls:
        step_fn = None
        external = None
        if model._is_step_call(call):
            if steps.calls_epoch_function(call) and _hands_a_loader(model, call):
                # ``trainer.train_network(train_loader)``, a method of a project class handed
                # the data loader, which loops over its batches and steps in each
                # (voxceleb_trainer, held-out 103): the step loop, and its sync, are that
                # method's; this loop runs epochs. (An agent's ``update(rollouts)`` that
                # loops over minibatches of what it is handed stays this loop's step.)
                continue
        elif (step_fn := steps.step_callee(call)) is not None:
            pass
        elif (external := steps.external_step(call)) is None:
            continue
        loop = model.innermost_loop(call)
        if loop is None:
            loop, nested = _loop_running_nested(model, call)
            if loop is None:
                continue
            step_fn = step_fn or nested
        entry = found.setdefault(loop, TrainingLoop(loop))
        entry.step_calls.append(call)
        if step_fn is not None and step_fn not in entry.step_functions:
            entry.step_functions.append(step_fn)
        if external is not None:
            entry.external_steps.append(external)
    for entry in found.values():
        # A step function that calls a deeper step function: include the callee too.
        entry.step_functions[:] = steps.callee_closure(entry.step_functions)
    for loop in list(found):
        if _is_accumulation_loop(model, found[loop]) or _retry_loop(model, found[loop]):
            del found[loop]
    for loop in sorted(found, key=node_order, reverse=True):
        outer = _variant_loop_parent(model, loop)
        if outer is not None:
            # ``for dataset in ["CelebA", "RaFD"]:`` inside the step loop runs one step per
            # variant: the iteration, and its sync, is the enclosing loop's.
            inner = found.pop(loop)
            entry = found.setdefault(outer, TrainingLoop(outer))
            entry.step_functions.extend(
                fn for fn in inner.step_functions if fn not in entry.step_functions
            )
            entry.external_steps.extend(inner.external_steps)
    return sorted(found.values(), key=lambda t: node_order(t.node))


def _retry_loop(model: ScriptModel, entry: TrainingLoop) -> bool:
    """Every step the loop runs leaves it in the same iteration: ``while chunk_size != 0:
    try: return learn(...) except RuntimeError: chunk_size //= 2`` (an out-of-memory retry,
    tabular-dl-revisiting-models, held-out 107) runs one step per call of its function; it
    goes round again only when the step failed. Not a step loop: the loop that calls the
    function is."""
    return bool(entry.step_calls) and all(
        leaves_after(model, entry.node, call) for call in entry.step_calls
    )


def _hands_a_loader(model: ScriptModel, call: ast.Call) -> bool:
    """An argument of ``call`` is a data loader: a DataLoader the script builds, or a name
    that says it is one (``train_loader``)."""
    from .loaders import Source, classify  # noqa: PLC0415 (loaders reads the model's loops)

    values = [*call.args, *(k.value for k in call.keywords)]
    return any(
        "loader" in (dotted(v) or "").rsplit(".", 1)[-1].lower()
        or classify(model, v) in (Source.PLAIN, Source.XLA)
        for v in values
    )


def training_loop_of(model: ScriptModel, node: ast.AST) -> TrainingLoop | None:
    for loop in model.training_loops:
        for region in loop.regions():
            if node is region or any(a is region for a in model.ancestors(node)):
                return loop
    return None


def iter_loop_body_nodes(model: ScriptModel) -> Iterator[tuple[TrainingLoop, ast.AST]]:
    seen: set[int] = set()
    for loop in model.training_loops:
        for region in loop.regions():
            body = region.body if isinstance(region, LOOP_TYPES) else region.body
            for stmt in body:
                for n in [stmt, *model.walk_scope(stmt)]:
                    if id(n) not in seen:
                        seen.add(id(n))
                        yield loop, n


def _variant_loop_parent(
    model: ScriptModel, loop: ast.AST
) -> ast.For | ast.While | ast.AsyncFor | None:
    """The enclosing loop of a loop over a literal sequence of constants, if any."""
    if not (
        isinstance(loop, ast.For)
        and isinstance(loop.iter, ast.List | ast.Tuple | ast.Set)
        and loop.iter.elts
        and all(isinstance(e, ast.Constant) for e in loop.iter.elts)
    ):
        return None
    return model.innermost_loop(loop)


def _is_accumulation_loop(model: ScriptModel, entry: TrainingLoop) -> bool:
    """A loop that only runs ``backward()`` while the code around it (the enclosing loop
    or function) updates the parameters: gradient accumulation within one step, whose
    step and sync belong to the code around it."""
    if entry.external_steps:
        return False
    for region in entry.regions():
        for n in model.walk_scope(region) if region is not entry.node else model.walk(region):
            if isinstance(n, ast.Call) and is_update_call(model, n):
                return False
    scope: ast.AST = model.tree
    for a in model.ancestors(entry.node):
        if isinstance(a, SCOPE_TYPES):
            scope = a
            break
    inside = set(map(id, model.walk(entry.node)))
    if any(
        isinstance(n, ast.Call) and id(n) not in inside and is_update_call(model, n)
        for n in model.walk_scope(scope)
    ):
        return True
    return isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and _called_by_updaters(
        model, scope
    )


def _called_by_updaters(model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every call of ``fn`` in this script sits in code that updates the parameters itself:
    robust_overfitting's ``attack_pgd`` (held-out 137) runs ``backward()`` on its perturbation
    ``attack_iters`` times, and the training loop that calls it steps the optimizer; the
    attack's iterations are part of that one step (its sync is the caller's)."""
    from .rank_guards import call_sites  # noqa: PLC0415 (reads the model's call graph)

    calls = call_sites(model, fn)
    if not calls:
        return False
    for call in calls:
        caller: ast.AST = model.tree
        for a in model.ancestors(call):
            if isinstance(a, SCOPE_TYPES):
                caller = a
                break
        if caller is fn or not any(
            isinstance(n, ast.Call) and is_update_call(model, n) for n in model.walk_scope(caller)
        ):
            return False
    return True
