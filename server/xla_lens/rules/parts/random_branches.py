"""Branches on a host random draw inside a loop of the training step (XLA402).

A seq2seq decoder that picks its next input by teacher forcing per time step, ``use_tf =
random.random() < ratio`` then ``inp = tgt[:, t] if use_tf else top1`` (held-out 172's DDP
translator), traces one of 2^(T-1) graphs: each step draws a new sequence of branches, so
nearly every step compiles a new graph (the probe's converted run took 20-30 s a step and timed
out). One draw per step outside such a loop gives at most two graphs, cached after: not
reported.

Reported where the branch runs inside a loop of a ``forward`` of this file's modules, or inside
a loop nested in the training loop (and the functions it calls). No fix: the decision has to
become data, e.g. ``mask = torch.rand(B, 1, device=d) < ratio`` and ``inp = torch.where(mask,
tgt[:, t], top1)``, one graph for every draw.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from ...semantic.arguments import local_bindings
from ...semantic.model import ScriptModel
from ..base import Finding, Severity

RANDOM_MODULES = ("random.", "numpy.random.")
LOOPS = (ast.For, ast.While, ast.AsyncFor)
MANUAL = (
    "Make the decision data instead of control flow: draw it as a device tensor and blend, "
    "`mask = torch.rand(batch, 1, device=device) < ratio` then `inp = torch.where(mask, "
    "target_t, predicted_t)`: one graph whatever is drawn. Or draw once per batch (at most "
    "two graphs, both cached)."
)


def random_branch_findings(
    model: ScriptModel, code: str, step_nodes: Iterable[tuple[ast.AST, str]]
) -> Iterator[Finding]:
    """``step_nodes``: (node, where) of a training iteration (the loop and the functions it
    runs); the forwards of this file's modules are added here."""
    if not any(
        _is_draw(model, call)
        for prefix in ("random", "numpy.random")
        for call, _ in model.calls_to_prefix(prefix)
    ):
        return  # no host random draw anywhere: nothing to branch on
    seen: set[int] = set()
    candidates = list(step_nodes) + list(_forward_nodes(model))
    for node, where in candidates:
        if not isinstance(node, ast.If | ast.IfExp | ast.While) or id(node) in seen:
            continue
        draw = _random_test(model, node.test)
        # The draw itself is made on each pass (a draw before the loop is one choice a step).
        if draw is None or not _inside_inner_loop(model, draw, where):
            continue
        seen.add(id(node))
        yield Finding(
            code,
            f"this branch follows a host random draw ({model.call_name(draw)}, line "
            f"{draw.lineno}) made again on every pass of the loop around it{where}: each pass's "
            "choice is part of the traced graph, so each step's sequence of choices is a new "
            "graph and XLA compiles again nearly every step",
            model.span(node.test),
            Severity.WARNING,
            manual=MANUAL,
        )


def _forward_nodes(model: ScriptModel) -> Iterator[tuple[ast.AST, str]]:
    for cls in model.nodes_of(ast.ClassDef):
        assert isinstance(cls, ast.ClassDef)
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "forward":
                where = f" in `{cls.name}.forward`"
                for node in model.walk_scope(stmt):
                    yield node, where


def _inside_inner_loop(model: ScriptModel, node: ast.AST, where: str) -> bool:
    """In a forward: inside any loop of it. In the training iteration: inside a loop nested
    in another loop (the training loop itself draws once per step)."""
    fn = model.enclosing_function(node)
    loops = 0
    for a in model.ancestors(node):
        if a is fn:
            break
        if isinstance(a, LOOPS):
            loops += 1
    if "forward" in where:
        return loops >= 1
    return loops >= 2 or (loops >= 1 and "runs" in where)


def _random_test(model: ScriptModel, test: ast.AST) -> ast.Call | None:
    """The host random draw a test reads: in it (``random.random() < p``) or through a name
    bound to such an expression in the same scope (``use_tf = random.random() < p``)."""
    for n in ast.walk(test):
        if isinstance(n, ast.Call) and _is_draw(model, n):
            return n
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            for b in local_bindings(model, n.id, n):
                value = b.value
                for m in ast.walk(value) if value is not None else ():
                    if isinstance(m, ast.Call) and _is_draw(model, m):
                        return m
    return None


def _is_draw(model: ScriptModel, call: ast.Call) -> bool:
    name = model.call_name(call) or ""
    return name.startswith(RANDOM_MODULES) and not name.endswith(("seed", "shuffle", "state"))


__all__ = ["random_branch_findings"]
