"""Whether a training loop already syncs on XLA once per iteration, so it needs no sync added.

A loop syncs when it (or a step function of it, or a function of this script they call) calls
``torch_xla.sync()`` / ``xm.mark_step()`` / ``xm.optimizer_step(barrier=True)``, when its step
is ``@torch_xla.compile``d, or when a sibling module's step syncs itself. A loop may also
leave the sync to the code around it (``sub_step_loop``), and a script written for XLA by hand
(``written_for_xla``) is trusted to sync where it means to. Where batches come from, and
whether that source syncs, is ``loaders.py``'s question.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .device_intent import EMITTED_MODULES, EMITTED_NAMES, uses_torch_xla_beyond
from .injected_xla import injected_xla_calls
from .loaders import Source, classify, iterated_loader, loop_source
from .model import SYNC_CALLS, keyword
from .node_helpers import LOOP_TYPES, SCOPE_TYPES

if TYPE_CHECKING:
    from .model import ScriptModel, TrainingLoop

COMPILERS = frozenset({"torch_xla.compile", "torch_xla.experimental.compile"})
OPTIMIZER_STEP = "torch_xla.core.xla_model.optimizer_step"


def sub_step_loop(model: ScriptModel, loop: TrainingLoop) -> bool:
    """A loop that draws no data of its own and repeats updates on a batch drawn around it,
    so the sync of each training iteration belongs to the code around it:

    - it is nested in another training loop of the same function (several discriminator
      steps per batch), or in a loop over an XLA loader;
    - it runs in a step function built by a factory (``def make_step(...): def train(x, y):
      ...; return train``) that this file never calls and that reads the batch it is handed:
      a trainer in another module calls it once per batch, and that batch loop syncs.

    Structure only, no torch_xla evidence: the answer is the same before and after any fix.
    """
    if loop_source(model, loop)[0] is not Source.NONE:
        return False
    loop_nodes = {id(t.node) for t in model.training_loops}
    for a in model.ancestors(loop.node):
        if isinstance(a, SCOPE_TYPES):
            break
        if isinstance(a, LOOP_TYPES) and (
            id(a) in loop_nodes or classify(model, iterated_loader(model, a)) is Source.XLA
        ):
            return True
    fn = model.enclosing_function(loop.node)
    return fn is not None and _returned_step_function(model, fn, loop.node)


def synced_around(model: ScriptModel, loop: TrainingLoop) -> bool:
    """An enclosing loop of the same function syncs every iteration with a statement of its
    own body: ``for step ...: for micro in range(grad_accum): ...backward()`` then
    ``xm.mark_step()`` in the outer body (held-out 75's TPU control). The inner loop runs
    inside one synced step, whatever it draws; a sync per micro-batch would only cut the
    step into more graphs."""
    for a in model.ancestors(loop.node):
        if isinstance(a, SCOPE_TYPES):
            return False
        if isinstance(a, LOOP_TYPES) and _syncs_every_iteration(model, a):
            return True
    return False


def _syncs_every_iteration(model: ScriptModel, loop: ast.AST) -> bool:
    """A sync call as a statement of the loop's own body (not under an ``if``)."""
    return any(
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and is_sync_call(model, stmt.value)
        for stmt in getattr(loop, "body", ())
    )


def _returned_step_function(
    model: ScriptModel, fn: ast.FunctionDef | ast.AsyncFunctionDef, loop: ast.AST
) -> bool:
    factory = model.enclosing_function(fn)
    if factory is None or not any(
        isinstance(r, ast.Return) and isinstance(r.value, ast.Name) and r.value.id == fn.name
        for r in model.walk_scope(factory)
    ):
        return False
    if any(
        isinstance(c.func, ast.Name | ast.Attribute)
        and (c.func.id if isinstance(c.func, ast.Name) else c.func.attr) == fn.name
        for c in model.calls
    ):
        return False  # called here: its caller's loop is in this file and judged itself
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    params -= {"self", "cls"}
    return any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(loop))


def written_for_xla(model: ScriptModel) -> bool:
    """The script uses torch_xla API that no xla-lens fix writes: ``pl.ParallelLoader``,
    ``torch_xla.compile``, metrics, SPMD sharding, ``xm.RateTracker``, ``xr`` queries beyond
    the world size and ordinals... (a call, or an import of such a module or name).

    What the fixes write (``torch_xla.device()``, ``torch_xla.sync()``/``xm.mark_step()``,
    ``xm.optimizer_step``, ``xm.add_step_closure``, ``pl.MpDeviceLoader``, the launcher, the
    imports they add) is no evidence: a script with only those may be a CUDA script with some
    fixes applied, and a judgement that read them would let one fix silence another rule's
    finding (XLA105's optimizer step made XLA107 drop its sync)."""
    return model.memo(written_for_xla, lambda: _uses_unemitted_xla(model))


def _emitted(qualname: str) -> bool:
    return qualname in EMITTED_NAMES or qualname in EMITTED_MODULES


def _uses_unemitted_xla(model: ScriptModel) -> bool:
    return uses_torch_xla_beyond(model, _emitted) or bool(injected_xla_calls(model))


def compiled_step(model: ScriptModel, fn: ast.AST) -> bool:
    """``@torch_xla.compile`` on a step function: each call runs and syncs one graph."""
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if model.qualname(target) in COMPILERS:
            return True
    return False


def is_sync_call(model: ScriptModel, call: ast.Call) -> bool:
    """A call that marks the step: a sync, or ``xm.optimizer_step(..., barrier=True)``."""
    name = model.call_name(call)
    if name in SYNC_CALLS:
        return True
    if name == OPTIMIZER_STEP:
        # optimizer_step(barrier=True) marks the step itself.
        barrier = keyword(call, "barrier")
        return (
            barrier is not None
            and isinstance(barrier.value, ast.Constant)
            and barrier.value.value is True
        )
    return False


def func_name(call: ast.Call) -> str:
    return call.func.id if isinstance(call.func, ast.Name) else ""


def loop_syncs(model: ScriptModel, loop: TrainingLoop) -> bool:
    """A sync in the loop, its step functions, a function or method of this script they
    call, or a sibling module's step function that syncs itself."""
    if any(ext.syncs for ext in loop.external_steps):
        return True
    if any(compiled_step(model, fn) for fn in loop.step_functions):
        return True
    seen: set[int] = set()
    regions: list[ast.AST] = list(loop.regions())
    while regions:
        region = regions.pop()
        if id(region) in seen:
            continue
        seen.add(id(region))
        for node in model.walk(region):
            if not isinstance(node, ast.Call):
                continue
            if is_sync_call(model, node):
                return True
            callee = model.steps.callee(node)
            if callee is not None:
                regions.append(callee)
            elif isinstance(node.func, ast.Name) and _workspace_sync(model, node):
                return True
    return False


def _workspace_sync(model: ScriptModel, call: ast.Call) -> bool:
    """``sync_step()`` imported from another module of the project that marks the step
    itself (``xm.mark_step()`` there: resnet18_pytorch_jax_tpu's utils, held-out 90)."""
    if not model.path or model.path.startswith("<") or func_name(call) in model.functions:
        return False
    facts = model.steps.external(call)
    return facts is not None and facts.syncs
