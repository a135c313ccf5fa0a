"""A rank-zero check that asks torch.distributed (``if get_rank() == 0:``), for XLA204's
review reason (held-out 22 r3, hysts' train.py).

When the launcher's replicas build no process group (it is built only under a flag the XLA
launcher never sets), torch.distributed answers rank 0 in every one of them, and a helper such
as ``get_rank()`` that returns 0 without a group says the same: each replica then passes the
check and writes the logs, checkpoints and config files, into the same paths.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel

RANK_CALLS = ("get_rank", "get_global_rank")


def rank_zero_check(model: ScriptModel) -> ast.Compare | None:
    """The first ``<rank call>() == 0`` (or ``0 == ...``, ``!= 0``) of the script."""
    for node in model.nodes_of(ast.Compare):
        assert isinstance(node, ast.Compare)
        if len(node.ops) != 1 or not isinstance(node.ops[0], ast.Eq | ast.NotEq):
            continue
        sides = (node.left, node.comparators[0])
        if any(_zero(s) for s in sides) and any(_rank_call(model, s) for s in sides):
            return node
    return None


def _zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0 and node.value is not False


def _rank_call(model: ScriptModel, node: ast.expr) -> bool:
    if not isinstance(node, ast.Call) or node.args:
        return False
    name = model.call_name(node) or ""
    last = name.rpartition(".")[2] or getattr(node.func, "id", "")
    return last in RANK_CALLS and "xla" not in name
