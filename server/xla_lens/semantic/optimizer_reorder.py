"""Whether XLA109 can put a model's move before the optimizer built from it: the move goes
above the build when both are plain statements of one block and nothing between them touches
the model (``safe``); a reorder past such uses waits for review; otherwise why there is none.
XLA101 asks too: a move XLA109 cannot reorder safely would, pointed at the XLA device, leave
that optimizer on the old Parameters.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .accelerate_prepare import is_prepare_move
from .edits import InsertBefore, RemoveStatement
from .line_refs import line_refs
from .model import ScriptModel, dotted, receiver
from .optimizer_events import WRAPPERS, Event


@dataclass(frozen=True)
class ReorderPlan:
    ops: tuple | None  # the edit, None when there is none
    title: str
    safe: bool
    reason: str  # why it waits for review, or why there is none


def _block(model: ScriptModel, stmt: ast.stmt) -> list[ast.stmt] | None:
    parent = model.parent(stmt)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and stmt in block:
            return block
    return None


def _guarded_move(model: ScriptModel, stmt: ast.stmt) -> ast.If | None:
    """The ``if`` whose whole body is the move ``stmt`` (no else, no elif above it)."""
    guard = model.parent(stmt)
    if not (isinstance(guard, ast.If) and guard.body == [stmt] and not guard.orelse):
        return None
    outer = model.parent(guard)
    if isinstance(outer, ast.If) and guard in outer.orelse:
        return None  # an elif: it runs only when the tests above it fail
    return guard


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


def _attributes_set(nodes: list[ast.stmt]) -> set[str]:
    """Dotted attributes assigned (``self.device = ...``, ``args.device = ...``)."""
    return {
        text
        for stmt in nodes
        for n in ast.walk(stmt)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Store)
        and (text := dotted(n)) is not None
    }


def _attributes_read(stmt: ast.stmt) -> set[str]:
    """Dotted attributes read, with every prefix (``self.cfg.device`` reads ``self.cfg``)."""
    found = set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
            text = dotted(n)
            while text is not None and "." in text:
                found.add(text)
                text = text.rpartition(".")[0]
    return found


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


def _derivations(block: list[ast.stmt], build: int, path: str) -> list[int]:
    """Statements ahead of the optimizer, back to the model's last binding (included), that
    bind a name the optimizer reads from a value that reads the model (``train_params =
    [{'params': get_1x_lr_params(model)}]``, held-out 70's video trainer; or ``params =
    trainable(model)``): the move has to go above them, or the optimizer may keep what they
    took from the old Parameters (a list does; only a generator is read after the move)."""
    root = path.split(".")[0]
    needed = _names([block[build]], ast.Load) - {root}
    found = []
    for k in range(build - 1, -1, -1):
        stmt = block[k]
        stores = _names([stmt], ast.Store)
        if stores & needed:
            # ``groups = [{"params": decay}]`` over ``decay = [... model.named_parameters()]``
            needed |= _names([stmt], ast.Load) - {root}
            if _touches(stmt, path):
                found.append(k)
        if root in stores:
            break
    return found


def _reads_only_parameters(stmt: ast.stmt, path: str) -> bool:
    """Every read of ``path``'s root in ``stmt`` is ``path.parameters()``."""
    root = path.split(".")[0]
    allowed: set[int] = set()
    for n in ast.walk(stmt):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "parameters"
            and dotted(n.func.value) == path
        ):
            allowed.update(id(x) for x in ast.walk(n.func.value))
    return all(id(n) in allowed for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == root)


def reorder_plan(model: ScriptModel, build: Event, move: Event) -> ReorderPlan:
    """The edit that moves the model first (safe or for review), or why there is none."""
    if build.holder or move.holder:
        # Through a module container the reorder would move the container's statement past
        # uses of the container this analysis does not follow: said, not rewritten.
        return ReorderPlan(None, "", False, "")
    if is_prepare_move(move) and not _is_plain_move(move):
        return ReorderPlan(None, "", False, "the `prepare()` call returns more than the model")
    if move.elsewhere:
        why = (
            f"the move runs inside `{move.via}(...)` ({move.elsewhere}); once `{move.path}` is "
            "on the device before the optimizer is built, that move keeps its Parameters"
        )
        return ReorderPlan(None, "", False, why)
    if move.via or not _is_plain_move(move):
        return ReorderPlan(None, "", False, "the move is not a statement of its own")
    wrapper = receiver(move.node)
    if (
        isinstance(wrapper, ast.Call)
        and (model.call_name(wrapper) or "") in WRAPPERS
        and not (
            _reads_only_parameters(build.stmt, move.path)
            and (build.taken is None or _reads_only_parameters(build.taken, move.path))
        )
    ):
        # ``net = DataParallel(net).cuda()`` above the optimizer would hand it the wrapper:
        # ``net.model`` is not an attribute of DataParallel (held-out 57's pose trainer), and
        # its ``named_parameters()`` names gain a ``module.`` prefix. Its ``parameters()`` are
        # the module's own.
        why = (
            f"the move also wraps `{move.path}` (`{model.segment(wrapper)}`) and rebinds it: "
            f"move `{move.path}` itself first (`{move.path}.to(device)`), then wrap it"
        )
        return ReorderPlan(None, "", False, why)
    if (
        build.via
        and isinstance(build.stmt, ast.Assign)
        and not isinstance(build.stmt.targets[0], ast.Name)
    ):
        return ReorderPlan(
            None, "", False, f"`{build.via}()` returns the model together with the optimizer"
        )
    block = _block(model, build.stmt)
    # ``if args.cuda: model = model.cuda()`` (held-out 81's matting trainer): the guarded
    # move goes up as a whole, its test with it.
    unit = _guarded_move(model, move.stmt) or move.stmt
    if block is None or unit not in block or block is not _block(model, unit):
        return ReorderPlan(None, "", False, "the build and the move are in different blocks")
    if not (model.in_indented_block(build.stmt) and model.in_indented_block(unit)):
        return ReorderPlan(None, "", False, "the statements share a line with their block header")
    i, j = block.index(build.stmt), block.index(unit)
    start = _first_parameter_read(block, i, move.path)
    root = move.path.split(".")[0]
    derived = _derivations(block, i, move.path)
    entangled = [k for k in derived if root in _names([block[k]], ast.Store)]
    start = min([start, *(k for k in derived if k not in entangled)])
    if build.taken is not None:
        # ``policies = model.get_optim_policies()`` took the Parameters earlier (TSM): the move
        # goes above that statement, or nowhere.
        if build.taken not in block:
            return ReorderPlan(None, "", False, "the Parameters are taken in another block")
        start = min(start, block.index(build.taken))
    if j < start:
        return ReorderPlan(None, "", False, "")
    between = block[start + 1 : j]
    reads = _names([unit], ast.Load) - {move.path.split(".")[0]}
    if reads & _names(block[start : i + 1] + between, ast.Store):
        return ReorderPlan(
            None, "", False, "a name the move reads is bound after the optimizer is built"
        )
    set_late = _attributes_set(block[start : i + 1] + between) & _attributes_read(unit)
    if set_late:
        # ``self.device = T.device(...)`` between the optimizer and ``self.to(self.device)``
        # (held-out 175's DQN): the move put above it read an attribute not set yet.
        path = sorted(set_late)[0]
        return ReorderPlan(
            None,
            "",
            False,
            f"`{path}`, which the move reads, is set after the optimizer is built: set it "
            "before the optimizer too",
        )
    # The engine keeps the removed statement's comments where it stood.
    code = model.segment(unit)
    ops = (RemoveStatement(model.span(unit)), InsertBefore(model.span(block[start]), code))
    title = f"Move the model to the device first: `{model.segment(move.stmt)}` before the optimizer"
    # What the optimizer takes from the model is meant to be taken after the move.
    taking = {id(block[k]) for k in derived}
    touching = [s for s in between if _touches(s, move.path) and id(s) not in taking]
    many = len({s.lineno for s in touching}) > 1
    uses = (
        f"line{'s' * many} {line_refs(s.lineno for s in touching)} "
        f"{'use' if many else 'uses'} `{move.path}` between the optimizer and the move"
        if touching
        else ""
    )
    if entangled:
        stmt = block[entangled[0]]
        taken = sorted(_names([stmt], ast.Store) & _names([build.stmt], ast.Load) - {root})
        names = ", ".join(f"`{n}`" for n in taken) or "what it reads"
        reason = (
            f"the optimizer takes {names}, built from `{move.path}` in the statement that "
            f"binds `{move.path}` (line {line_refs([stmt.lineno])}), before the move: the "
            "reorder keeps it on the moved Parameters only where that holds generators read "
            "when the optimizer is built (`model.parameters()`, a generator function); a "
            f"list of them keeps the CPU ones: move `{move.path}` right after it is built "
            "instead"
        )
        return ReorderPlan(ops, title, False, f"{reason}; and {uses}" if uses else reason)
    if touching:
        return ReorderPlan(ops, title, False, uses)
    if is_prepare_move(move):
        reason = (
            "`prepare()` may also wrap the model (DDP, mixed precision) before the optimizer "
            "is built from it; preparing both in one call is accelerate's own form"
        )
        return ReorderPlan(ops, title, False, reason)
    return ReorderPlan(ops, title, True, "")
