"""XLA109: an optimizer built from a model's parameters before the model moves to the device.

On CUDA ``model.to(device)`` keeps the Parameter objects; on XLA it replaces them, so an
optimizer built earlier updates stale CPU tensors: the loss never improves and nothing
fails (verified on torch_xla 2.9). The fix moves the model first, when the move is a plain
statement of the same block and nothing between the two statements touches the model;
otherwise the finding says what to change (a blocking error: the script would not train).
accelerate's ``prepare(model)`` is a move too (``semantic/accelerate_prepare.py``); its
reorder is only ever a review.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic.accelerate_prepare import is_prepare_move, stale_optimizers
from ..semantic.line_refs import line_ref
from ..semantic.model import ScriptModel
from ..semantic.optimizer_events import Event
from ..semantic.optimizer_reorder import reorder_plan
from .base import Category, Finding, Fix, Rule, RuleContext, Severity
from .parts.caller_stale_optimizers import caller_stale_optimizers
from .parts.handed_optimizer_moves import derived_parameter_builds, handed_optimizer_moves
from .parts.self_move_handed_optimizers import self_move_handed_optimizers
from .parts.self_optimizers import (
    SelfOptimizer,
    self_moves_after_builds,
    self_optimizers,
    workspace_self_optimizers,
)

CODE = "XLA109"


def _where(model: ScriptModel, event: Event | SelfOptimizer) -> str:
    node = event.node if isinstance(event, Event) else event.move
    text = " ".join(model.segment(node).split())  # a multi-line call, on one line
    text = text.replace("( ", "(").replace(" )", ")").replace(", )", ")")
    if len(text) > 60:
        text = text[:57] + "..."
    return f"`{text}` (line {line_ref(node.lineno)})"  # type: ignore[attr-defined]


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    # The engine's hold on XLA101's fixes (parts/stale_optimizer_hold.py) asks for these
    # findings again: computed once per parse.
    return iter(model.memo((CODE, ctx.target), lambda: list(_check(model, ctx))))


def _check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from caller_stale_optimizers(model, CODE)
    yield from handed_optimizer_moves(model, CODE)
    yield from derived_parameter_builds(model, CODE)
    yield from self_move_handed_optimizers(model, CODE)
    for found in self_optimizers(model):
        name = found.cls.name
        yield Finding(
            CODE,
            f"`{name}.__init__` builds its optimizer from `self.parameters()` before "
            f"{_where(model, found)} moves the instance to the device: on XLA the move creates "
            "new Parameter objects, so this optimizer updates stale CPU tensors and the model "
            "never trains",
            model.span(found.build),
            Severity.ERROR,
            manual=f"Move the module in `{name}.__init__` before building the optimizer "
            "(`self.to(device)` first), or build the optimizer after the move, outside the "
            "class (`model.optimizer = ...(model.parameters(), ...)`).",
            related=((model.span(found.move), "the instance moves to the device here"),),
        )
    for ctor, move in workspace_self_optimizers(model):
        where = f"{ctor.path.name} line {line_ref(ctor.line)}"  # type: ignore[union-attr]
        yield Finding(
            CODE,
            f"{ctor.builder(where)} builds its optimizer from `{ctor.text}` before "
            f"`{model.segment(move)}` moves the instance to the device{ctor.alternatives}: on "
            "XLA the move creates "
            "new Parameter objects, so this optimizer updates stale CPU tensors and the model "
            "never trains",
            model.span(move),
            Severity.ERROR,
            manual=f"In {ctor.path}, move the module before building the optimizer in "
            f"`{ctor.cls}.__init__` (`self.to(device)` first), or build the optimizer after the "
            "move.",
        )
    stale = list(stale_optimizers(model))
    # A build both checks find is reported once, by the one that plans the reorder (held-out
    # 175's DQN had two findings at one optimizer).
    planned = {id(build.node) for build, _ in stale}
    for found in self_moves_after_builds(model):
        if id(found.build) in planned:
            continue
        owner = model.parent(found.fn)
        where = (
            f"{owner.name}.{found.fn.name}" if isinstance(owner, ast.ClassDef) else found.fn.name
        )
        moved = model.segment(found.move)
        yield Finding(
            CODE,
            f"`{where}` builds this optimizer from parameters of its own submodules before "
            f"`{moved}` (line {line_ref(found.move.lineno)}) moves them to the device: on XLA "
            "the move creates new Parameter objects, so the optimizer updates stale CPU "
            "tensors and the model never trains",
            model.span(found.build),
            Severity.ERROR,
            manual=f"Call `{moved}` before building the optimizers in `{where}`.",
            related=((model.span(found.move), "the module moves to the device here"),),
        )
    for build, move in stale:
        plan = reorder_plan(model, build, move)
        fix = (
            Fix(plan.title, plan.ops, safe=plan.safe, review_reason=plan.reason)
            if plan.ops is not None
            else None
        )
        why = plan.reason
        prepared = is_prepare_move(move)
        remap = (
            " and accelerate re-maps an optimizer onto them only when it is prepared in the "
            "same `prepare()` call as the model"
            if prepared
            else ""
        )
        built_from = (
            f"`{build.holder}` parameters (`{build.path}` among them)"
            if build.holder
            else f"`{build.path}` parameters"
        )
        if build.taken is not None and build.taken.lineno < move.stmt.lineno < build.stmt.lineno:
            # ``trainable = list(...parameters())`` taken first, the optimizer built later.
            built_from += f" taken on line {line_ref(build.taken.lineno)}"
        held = f", which holds `{move.path}` too," if move.holder else ""
        if move.elsewhere:
            held = f" (in {move.elsewhere})"
        message = (
            f"optimizer built from {built_from} before {_where(model, move)}{held} moves "
            f"it to the device: on XLA the move creates new Parameter objects{remap}, so this "
            "optimizer updates stale CPU tensors and the model never trains"
        )
        manual = None
        if prepared and (fix is None or not fix.safe):
            manual = (
                f"prepare `{move.path}` and the optimizer in one call (`model, optimizer = "
                "accelerator.prepare(model, optimizer)`), or prepare the model before building "
                f"the optimizer{': ' + why if why else ''}"
            )
        elif fix is None or not fix.safe:
            manual = (
                f"move `{move.holder or move.path}` to the device before building the optimizer "
                f"(or build the optimizer after the move){': ' + why if why else ''}"
            )
            if build.via and fix is None:
                manual += f"; the optimizer is built inside `{build.via}()`"
        severity = Severity.ERROR
        moved_first = _moved_by_every_caller(model, move)
        if moved_first is not None:
            # Torch-Pruning's ``train_model(model, ...)`` (held-out 111): its caller moved the
            # model already; a move onto the device it is on keeps its Parameters.
            message += (
                f", unless it is on that device already: every call in this file hands it a "
                f"model moved to a device first (line {line_ref(moved_first)}), and a move onto "
                "the device it is on keeps its Parameters"
            )
            severity = Severity.WARNING
        yield Finding(
            CODE,
            message,
            model.span(build.node),
            severity,
            fix=fix,
            manual=manual,
            related=((model.span(move.node), "the model moves to the device here"),),
        )


def _moved_by_every_caller(model: ScriptModel, move: object) -> int | None:
    """The 1-based line of a caller's move when the moved model is a parameter of the
    function and every call of that function in this file passes a name the caller moved
    (``model = model.to(args.device)``) before the call; None otherwise."""
    path = getattr(move, "path", "")
    scope = getattr(move, "scope", None)
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) or "." in path:
        return None
    params = [*scope.args.posonlyargs, *scope.args.args]
    index = next((i for i, a in enumerate(params) if a.arg == path), None)
    if index is None:
        return None
    calls = [c for c in model.calls if model.steps.callee(c) is scope]
    lines = []
    for call in calls:
        arg = call.args[index] if index < len(call.args) else None
        if arg is None:
            arg = next((k.value for k in call.keywords if k.arg == path), None)
        line = _moved_before(model, arg, call) if isinstance(arg, ast.Name) else None
        if line is None:
            return None
        lines.append(line)
    return min(lines) if lines else None


def _moved_before(model: ScriptModel, name: ast.Name, call: ast.Call) -> int | None:
    """A statement of the caller's scope before ``call`` that moves ``name``:
    ``name = name.to(...)`` / ``name.to(...)`` / ``.cuda()``; the latest one, if no later
    store binds the name to something else."""
    scope = model.enclosing_function(call) or model.tree
    found = None
    for node in model.walk_scope(scope):
        if not isinstance(node, ast.Call) or (node.lineno, node.col_offset) >= (
            call.lineno,
            call.col_offset,
        ):
            continue
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("to", "cuda")
            and isinstance(func.value, ast.Name)
            and func.value.id == name.id
        ):
            found = node.lineno
    if found is None:
        return None
    for use in model.name_nodes(name.id):
        if (
            isinstance(use.ctx, ast.Store)
            and found < use.lineno < call.lineno
            and model.enclosing_function(use) is model.enclosing_function(call)
        ):
            return None  # bound again after the move
    return found


HOVER = """\
**XLA109 · optimizer built before the model moves to the device**

On CUDA `model.to(device)` keeps the same `Parameter` objects; on XLA it creates new ones.
An optimizer built from `model.parameters()` before the move keeps the old CPU tensors:
`optimizer.step()` updates them, the model on the device never changes, the loss stays
flat, and nothing fails (verified on torch_xla 2.9).

```python
model = Net()
model.to(device)                                   # first
optimizer = torch.optim.SGD(model.parameters())    # then
```

Found across functions too: a trainer class whose `__init__` builds the optimizer and a
later method moves the model, a helper returning `(model, optimizer)`, a module-level
optimizer and a function that moves the model. With accelerate, `accelerator.prepare(model)`
is the move, and an optimizer prepared in another `prepare()` call stays stale: prepare both
in one call, `model, optimizer = accelerator.prepare(model, optimizer)`. Fix: the move
statement goes before the optimizer when both are plain statements of one block and nothing
between them uses the model; otherwise reorder by hand. Same on the legacy and modern targets.
"""

RULE = Rule(
    code=CODE,
    name="optimizer-before-move",
    category=Category.CONVERSION,
    summary="Optimizer built from model.parameters() before the model moves to the XLA device → move the model first",
    severity=Severity.ERROR,
    check=check,
    has_fix=True,
    hover={".parameters": HOVER},
)
