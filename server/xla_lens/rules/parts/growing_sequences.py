"""Sequences grown one step at a time by concatenation (XLA402): the token-by-token sampling
loop of a language model, ``idx = torch.cat((idx, idx_next), dim=1)`` with ``idx`` (or a crop
of it) fed to the model in the same loop (held-out 20, karpathy's ng-video-lecture
``generate``).

Every iteration hands the model a longer tensor, a new shape. Measured on PJRT CPU, 12 tokens
of a small model: with a sync per token, 13 compiles (one graph per length); without one, the
loop traced all 12 iterations into a single graph that ran only at the final ``.tolist()``
(500 tokens: 500 forward passes in one graph). Reported with advice and no fix: keeping the
shape fixed changes how the loop is written (a preallocated sequence, a fixed window, a
static cache).

Only loops that are not training loops nor unsynced loops inside one training step (each step
traces the same lengths into its graph, compiled once), that rebind a name to a ``torch.cat`` of itself and
pass that name, or a name made from it in the loop, to a call that is not a torch function
(the model): a loop collecting predictions with ``torch.cat`` feeds nothing back and is not
taken.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator

from ...semantic.cpu_modules import moved_to_cpu
from ...semantic.device_intent import places_on_a_device
from ...semantic.host_values import host_values
from ...semantic.line_refs import line_ref
from ...semantic.loop_syncs import loop_syncs
from ...semantic.model import ScriptModel, TrainingLoop
from ..base import Finding, Severity

CATS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.hstack"})
MANUAL = (
    "Keep the shape fixed: allocate the sequence at its final length and write each new token "
    "into it (`idx[:, t] = idx_next[:, 0]`), feeding the model a fixed-size window (pad the "
    "context to the block size and mask the padding) or use a static KV cache; and call "
    "torch_xla.sync() after each token so each step runs as it is traced."
)


def growing_sequence_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    if not places_on_a_device(model):
        return  # a CPU script: nothing runs on a device to recompile
    training = {id(t.node) for t in model.training_loops}
    values = host_values(model)
    step_functions = model.steps.step_functions
    for loop in model.nodes_of(ast.For, ast.While):
        if id(loop) in training:
            continue
        if _inside_a_step(model, loop, training, step_functions):
            continue
        for grown, cat in _grown_names(model, loop):
            call = _fed_to_a_call(model, loop, grown, cat)
            if call is None or values.is_host(cat) or moved_to_cpu(model, call.func):
                continue  # ``cpu_model(idx)`` with ``cpu_model = model.to("cpu")``: off XLA
            synced = loop_syncs(model, TrainingLoop(loop))
            after = (
                "each iteration compiles a graph of its own, one per length"
                if synced
                else "with no sync in the loop, all the iterations are traced into one graph "
                "that runs only when the result is read after the loop (a forward pass per "
                "step, all in that graph); with a sync per step it is one compile per length"
            )
            yield Finding(
                code,
                f"`{grown}` grows by `{model.segment(cat.func)}` on every iteration of this loop "
                f"and is fed to `{model.segment(call.func)}(...)` (line {line_ref(call.lineno)}): "
                f"each new length is a new shape for XLA; {after}",
                model.span(cat),
                Severity.WARNING,
                manual=MANUAL,
            )
            break


def _inside_a_step(model: ScriptModel, loop: ast.AST, training: set[int], steps: set) -> bool:
    """A loop of one training step (XMem's per-frame loop in ``do_pass``, held-out 47), with
    no sync of its own: every step traces the same sequence of lengths into its one graph,
    compiled once and then reused, not a new shape per step."""
    if not any(id(a) in training or a in steps for a in model.ancestors(loop)):
        return False
    if _samples(model, loop):
        return False  # a generation loop run during training (build-nanogpt's periodic samples)
    return not loop_syncs(model, TrainingLoop(loop))


SAMPLING = frozenset({"torch.multinomial", "torch.no_grad", "torch.inference_mode"})


def _samples(model: ScriptModel, loop: ast.AST) -> bool:
    """The loop draws tokens or runs without gradients (``torch.multinomial``, a ``no_grad``
    block inside or around it): generation, not the frames of one training step."""
    if any(isinstance(n, ast.Call) and model.call_name(n) in SAMPLING for n in model.walk(loop)):
        return True
    return any(
        isinstance(a, ast.With)
        and any(
            isinstance(i.context_expr, ast.Call) and model.call_name(i.context_expr) in SAMPLING
            for i in a.items
        )
        for a in model.ancestors(loop)
    )


def _grown_names(model: ScriptModel, loop: ast.AST) -> Iterator[tuple[str, ast.Call]]:
    """``name = torch.cat((name, ...), ...)`` statements directly in the loop's body scope."""
    for node in model.walk_scope(loop):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and model.call_name(node.value) in CATS
            and node.value.args
            and isinstance(node.value.args[0], ast.Tuple | ast.List)
        ):
            continue
        name = node.targets[0].id
        parts = node.value.args[0].elts  # type: ignore[attr-defined]
        if parts and isinstance(parts[0], ast.Name) and parts[0].id == name:
            if not _rebound_fresh(model, loop, name):
                yield name, node.value


def _rebound_fresh(model: ScriptModel, loop: ast.AST, name: str) -> bool:
    """``name`` gets a new value in the loop that is not made from itself: a ``for`` target
    (text2img-DiT's ``for x, y in loader`` around a sampling block's ``y = torch.cat([y,
    y_null])``, held-out 84) or a reset, so the concatenation does not carry into the next
    iteration of this loop."""
    for node in [loop, *model.walk_scope(loop)]:
        if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            if any(isinstance(t, ast.Name) and t.id == name for t in ast.walk(node.target)):
                return True
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            binds = any(isinstance(t, ast.Name) and t.id == name for t in targets) or any(
                isinstance(e, ast.Name) and e.id == name
                for t in targets
                if isinstance(t, ast.Tuple | ast.List)
                for e in t.elts
            )
            if binds and not any(
                isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.value)
            ):
                return True
    return False


def _fed_to_a_call(model: ScriptModel, loop: ast.AST, grown: str, cat: ast.Call) -> ast.Call | None:
    """The first call in the loop, not a torch function, whose arguments mention ``grown`` or
    a name the loop makes from it (``idx_cond = idx[:, -block_size:]``)."""
    body = [n for n in model.walk_scope(loop)]
    derived = {grown}
    changed = True
    while changed:
        changed = False
        for node in body:
            if (
                isinstance(node, ast.Assign)
                and node.value is not cat
                and _mentions(node.value, derived)
            ):
                for target in node.targets:
                    for n in ast.walk(target):
                        if isinstance(n, ast.Name) and n.id not in derived:
                            derived.add(n.id)
                            changed = True
    calls = sorted(
        (n for n in body if isinstance(n, ast.Call) and n is not cat),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for call in calls:
        name = model.call_name(call) or ""
        if name.split(".")[0] == "torch" or _builtin(model, call):
            continue  # torch ops and ``min(block, idx.shape[1])`` are no model
        args = [*call.args, *(k.value for k in call.keywords)]
        if any(_mentions(a, derived) for a in args):
            return call
    return None


def _builtin(model: ScriptModel, call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Name)
        and hasattr(builtins, func.id)
        and func.id not in model.imports
        and func.id not in model.functions
    )


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


__all__ = ["growing_sequence_findings"]
