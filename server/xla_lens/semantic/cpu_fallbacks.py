"""CPU fallbacks of a device choice: ``device = "cuda"`` first, then

    if not torch.cuda.is_available():
        device = "cpu"

(or the ``else:`` of ``if torch.cuda.is_available():``). hysts/pytorch_image_classification
(held-out 25) keeps ``config.device = 'cuda'`` in its defaults and sets ``'cpu'`` in train.py
when CUDA is missing. On an XLA host CUDA is always missing, so the fallback always runs:
whatever the conversion makes of the default, the script trains on the CPU. Pure analysis.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from . import pickers
from .model import ScriptModel, const_str
from .node_helpers import dotted


@dataclass(frozen=True)
class CpuFallback:
    assign: ast.Assign  # ``device = "cpu"``
    target: str  # ``device`` / ``config.device``
    guard: ast.If


def cpu_fallbacks(model: ScriptModel) -> list[CpuFallback]:
    return model.memo(cpu_fallbacks, lambda: _find(model))


def fallback_for(model: ScriptModel, target: str) -> CpuFallback | None:
    return next((f for f in cpu_fallbacks(model) if f.target == target), None)


def _find(model: ScriptModel) -> list[CpuFallback]:
    out = []
    for node in model.nodes_of(ast.If):
        assert isinstance(node, ast.If)
        test = node.test
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        inner = test.operand if negated else test  # type: ignore[union-attr]
        if not pickers.is_availability(model, inner) or pickers.if_picker(
            model, _chain_top(model, node)
        ):
            continue  # ``if avail: d = "cuda" else: d = "cpu"`` is a picker, converted whole
        # Runs on an XLA host: the body of ``if not avail():``, the else of ``if avail():``.
        block = node.body if negated else node.orelse
        for stmt in block:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and _is_cpu(stmt.value)
                and (name := dotted(stmt.targets[0])) is not None
                and "dev" in name.rpartition(".")[2].lower()
            ):
                out.append(CpuFallback(stmt, name, node))
    return out


def _chain_top(model: ScriptModel, node: ast.If) -> ast.If:
    """The first ``if`` of the if/elif chain ``node`` is part of."""
    parent = model.parent(node)
    while isinstance(parent, ast.If) and parent.orelse == [node]:
        node, parent = parent, model.parent(parent)
    return node


def _is_cpu(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and node.args:
        node = node.args[0]  # torch.device("cpu")
    return (const_str(node) or "").split(":")[0] == "cpu"
