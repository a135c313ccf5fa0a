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
from ..semantic.line_refs import line_ref, line_refs
from ..semantic.model import ScriptModel, dotted
from ..semantic.optimizer_events import Event
from .base import Category, Finding, Fix, InsertBefore, RemoveStatement, Rule, RuleContext, Severity
from .parts.caller_stale_optimizers import caller_stale_optimizers
from .parts.handed_optimizer_moves import derived_parameter_builds, handed_optimizer_moves
from .parts.self_optimizers import SelfOptimizer, self_moves_after_builds, self_optimizers

CODE = "XLA109"


def _block(model: ScriptModel, stmt: ast.stmt) -> list[ast.stmt] | None:
    parent = model.parent(stmt)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and stmt in block:
            return block
    return None


def _is_plain_move(move: Event) -> bool:
    """``model.to(d)`` / ``model.cuda()`` alone, or ``model = model.to(d)``."""
    stmt = move.stmt
    if isinstance(stmt, ast.Expr):
        return stmt.value is move.node
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return stmt.value is move.node and dotted(stmt.targets[0]) == move.path
    return False


def _names(nodes: list[ast.stmt], ctx: type) -> set[str]:
    return {
        n.id
        for stmt in nodes
        for n in ast.walk(stmt)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)
    }


def _touches(stmt: ast.stmt, path: str) -> bool:
    root, _, rest = path.partition(".")
    for n in ast.walk(stmt):
        if root != "self" and isinstance(n, ast.Name) and n.id == root:
            return True
        if root == "self" and isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            if n.value.id == "self" and (n.attr == rest.split(".")[0] or _is_call(stmt, n)):
                return True
    return False


def _is_call(stmt: ast.stmt, attr: ast.Attribute) -> bool:
    return any(isinstance(c, ast.Call) and c.func is attr for c in ast.walk(stmt))


PARAMETER_READS = frozenset({"parameters", "named_parameters"})


def _first_parameter_read(block: list[ast.stmt], build: int, path: str) -> int:
    """Where the move must go: before the first statement ahead of the optimizer that takes
    the model's Parameters (``trainable = list(filter(..., unet.parameters()))`` then
    ``AdamW(trainable)``; held-out 43, AnimateDiff: a move inserted between the two left the
    optimizer on the old Parameters), after the last binding of the model; else the build."""
    root = path.split(".")[0]
    first = build
    for k in range(build - 1, -1, -1):
        stmt = block[k]
        if root in _names([stmt], ast.Store):
            break
        if any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in PARAMETER_READS
            and dotted(n.func.value) == path
            for n in ast.walk(stmt)
        ):
            first = k
    return first


def _reorder(model: ScriptModel, build: Event, move: Event) -> tuple[Fix | None, str]:
    """The fix that moves the model first, or why there is none."""
    if is_prepare_move(move) and not _is_plain_move(move):
        return None, "the `prepare()` call returns more than the model"
    if move.elsewhere:
        return None, (
            f"the move runs inside `{move.via}(...)` ({move.elsewhere}); once `{move.path}` is "
            "on the device before the optimizer is built, that move keeps its Parameters"
        )
    if move.via or not _is_plain_move(move):
        return None, "the move is not a statement of its own"
    if (
        build.via
        and isinstance(build.stmt, ast.Assign)
        and not isinstance(build.stmt.targets[0], ast.Name)
    ):
        return None, f"`{build.via}()` returns the model together with the optimizer"
    block = _block(model, build.stmt)
    if block is None or move.stmt not in block or block is not _block(model, move.stmt):
        return None, "the build and the move are in different blocks"
    if not (model.in_indented_block(build.stmt) and model.in_indented_block(move.stmt)):
        return None, "the statements share a line with their block header"
    i, j = block.index(build.stmt), block.index(move.stmt)
    start = _first_parameter_read(block, i, move.path)
    between = block[start + 1 : j]
    reads = _names([move.stmt], ast.Load) - {move.path.split(".")[0]}
    if reads & _names(block[start : i + 1] + between, ast.Store):
        return None, "a name the move reads is bound after the optimizer is built"
    # The engine keeps the removed statement's comments where it stood.
    code = model.segment(move.stmt)
    ops = (RemoveStatement(model.span(move.stmt)), InsertBefore(model.span(block[start]), code))
    title = f"Move the model to the device first: `{model.segment(move.stmt)}` before the optimizer"
    touching = [s for s in between if _touches(s, move.path)]
    if touching:
        lines = line_refs(s.lineno for s in touching)
        reason = f"line {lines} uses `{move.path}` between the optimizer and the move"
        return Fix(title, ops, safe=False, review_reason=reason), reason
    if is_prepare_move(move):
        reason = (
            "`prepare()` may also wrap the model (DDP, mixed precision) before the optimizer "
            "is built from it; preparing both in one call is accelerate's own form"
        )
        return Fix(title, ops, safe=False, review_reason=reason), reason
    return Fix(title, ops), ""


def _where(model: ScriptModel, event: Event | SelfOptimizer) -> str:
    node = event.node if isinstance(event, Event) else event.move
    text = " ".join(model.segment(node).split())  # a multi-line call, on one line
    text = text.replace("( ", "(").replace(" )", ")").replace(", )", ")")
    if len(text) > 60:
        text = text[:57] + "..."
    return f"`{text}` (line {line_ref(node.lineno)})"  # type: ignore[attr-defined]


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from caller_stale_optimizers(model, CODE)
    yield from handed_optimizer_moves(model, CODE)
    yield from derived_parameter_builds(model, CODE)
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
    for found in self_moves_after_builds(model):
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
    for build, move in stale_optimizers(model):
        # Through a module container the reorder would move the container's statement past
        # uses of the container this analysis does not follow: said, not rewritten.
        fix, why = (None, "") if build.holder or move.holder else _reorder(model, build, move)
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
        yield Finding(
            CODE,
            message,
            model.span(build.node),
            Severity.ERROR,
            fix=fix,
            manual=manual,
            related=((model.span(move.node), "the model moves to the device here"),),
        )


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
