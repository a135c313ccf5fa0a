"""A slice length drawn at random every step (XLA402, held-out 23 r2: awd-lstm-lm's
variable-length backprop through time):

    bptt = args.bptt if np.random.random() < 0.95 else args.bptt / 2.
    seq_len = max(5, int(np.random.normal(bptt, 5)))
    data, targets = get_batch(train_data, i, args, seq_len=seq_len)   # source[i:i + seq_len]

A Python int that sizes a slice is a constant of the traced graph: every new length is a new
batch shape, and XLA compiles the whole step again for it (a normal draw gives dozens of
lengths, so most steps compile). Reported at the call that slices with the drawn length (a
function of this file or of a workspace module, read, never imported), with advice and no
fix: the schedule of lengths is the author's to change.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...semantic.arguments import local_bindings
from ...semantic.loop_frames import loop_nodes
from ...semantic.model import ScriptModel
from ...semantic.workspace_calls import helper_target, parsed_module
from ..base import Finding, Severity
from .helper_reads import sibling_model
from .random_offsets import RANDOM_MODULES

MANUAL = (
    "Keep the length fixed on XLA (the configured length for every step), or draw it from a "
    "few fixed lengths (e.g. bptt and bptt // 2) so the step compiles once per length; pad or "
    "drop a short last chunk too."
)
FOLLOW = 3  # assignments followed back from the length to its draw


def random_length_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    seen: set[int] = set()
    draws: dict[int, bool] = {}
    for loop, node in loop_nodes(model):
        if not isinstance(node, ast.Call) or id(node) in seen:
            continue
        seen.add(id(node))
        # The draw must be in the loop itself: a loop without one is skipped whole, before
        # any binding is looked up (most loops).
        if id(loop.node) not in draws:
            draws[id(loop.node)] = any(
                isinstance(n, ast.Call) and (model.call_name(n) or "").startswith(RANDOM_MODULES)
                for n in ast.walk(loop.node)
            )
        if not draws[id(loop.node)] or not any(
            isinstance(a, ast.Name) for a in (*node.args, *(k.value for k in node.keywords))
        ):
            continue
        found = _slicing_callee(model, node)
        # Drawn once before the loop, the length is one shape for every step.
        if found is not None and model.span(loop.node).contains(model.span(found[1])):
            name, call, where = found
            shown = f"`{model.segment(node.func)}(...)`"
            yield _finding(model, code, node, shown, name, call, where)


def _finding(model, code, node, shown, name, draw, where) -> Finding:
    return Finding(
        code,
        f"{shown} slices with `{name}`, drawn at random every step ({model.call_name(draw)}, "
        f"line {draw.lineno}{where}): a Python int that sizes a slice is a constant of the "
        "traced graph, so every new length is a new batch shape and XLA compiles the step "
        "again for it",
        model.span(node),
        Severity.WARNING,
        manual=MANUAL,
    )


def _random_draw(model: ScriptModel, expr: ast.AST, depth: int = 0) -> ast.Call | None:
    """The host random draw ``expr`` is computed from, through up to FOLLOW assignments."""
    for n in ast.walk(expr):
        if isinstance(n, ast.Call) and (model.call_name(n) or "").startswith(RANDOM_MODULES):
            return n
    if depth >= FOLLOW:
        return None
    for n in ast.walk(expr):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            for b in local_bindings(model, n.id, n):
                if b.value is not None and b.value is not expr:
                    draw = _random_draw(model, b.value, depth + 1)
                    if draw is not None:
                        return draw
    return None


def _length_names(node: ast.Subscript) -> set[str]:
    """Names in a slice's end that its start does not also read: what sets its length
    (``source[i:i + seq_len]``: seq_len; ``x[start:start + n]`` moves, its length is n)."""
    index = node.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    out: set[str] = set()
    for p in parts:
        if isinstance(p, ast.Slice) and p.upper is not None:
            lower = _names(p.lower) if p.lower is not None else set()
            out |= _names(p.upper) - lower
    return out


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _drawn_arguments(model: ScriptModel, call: ast.Call) -> list[tuple[int | str, str, ast.Call]]:
    """(position or keyword, the name passed, its draw) for each argument drawn at random."""
    out: list[tuple[int | str, str, ast.Call]] = []
    passed: list[tuple[int | str, ast.expr]] = list(enumerate(call.args))
    passed += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
    for key, value in passed:
        if not isinstance(value, ast.Name):
            continue
        for b in local_bindings(model, value.id, value):
            draw = _random_draw(model, b.value) if b.value is not None else None
            if draw is not None:
                out.append((key, value.id, draw))
                break
    return out


def _slicing_callee(model: ScriptModel, call: ast.Call) -> tuple[str, ast.Call, str] | None:
    drawn = _drawn_arguments(model, call)
    if not drawn:
        return None
    fn = model.steps.callee(call)
    callee_model, where_file = model, ""
    if fn is None:
        target = helper_target(model, call)
        parsed = parsed_module(target.path) if target is not None else None
        fn = parsed.functions.get(target.function) if parsed and target else None
        if fn is None or parsed is None:
            return None
        callee_model, where_file = sibling_model(parsed), f"{parsed.path.name}:"
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if params and params[0] in {"self", "cls"} and isinstance(call.func, ast.Attribute):
        params = params[1:]
    for key, name, draw in drawn:
        param = params[key] if isinstance(key, int) and key < len(params) else key
        if not isinstance(param, str):
            continue
        sliced = _slice_sized_by(callee_model, fn, param)
        if sliced is not None:
            where = f"; `{callee_model.segment(sliced)[:40]}` in `{fn.name}`, {where_file}{sliced.lineno}"
            return name, draw, where
    return None


def _slice_sized_by(model: ScriptModel, fn: ast.AST, param: str) -> ast.Subscript | None:
    """A slice in ``fn`` bounded by ``param`` or by a local computed from it."""
    names = {param}
    for node in model.walk_scope(fn):
        if isinstance(node, ast.Assign) and any(
            isinstance(n, ast.Name) and n.id in names for n in ast.walk(node.value)
        ):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    slices = sorted(
        (n for n in model.walk_scope(fn) if isinstance(n, ast.Subscript)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    return next((s for s in slices if _length_names(s) & names), None)
