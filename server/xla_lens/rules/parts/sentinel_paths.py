"""XLA202: a torchrun sentinel whose branch is the only way through (held-out 14, vicreg's
``init_distributed_mode``: ``if "RANK" in os.environ and "WORLD_SIZE" in os.environ:`` sets
``args.rank``, ``args.world_size`` and starts the process group, ``else: return``).

Under ``torchrun --nproc_per_node=1`` the sentinel is True, so a single process takes the
branch. Rewritten as ``xr.world_size() > 1`` it is False on one XLA device: the branch is
skipped, the function returns, and code that reads what the branch set fails.
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel
from ...semantic.node_helpers import dotted

STOPS = (ast.Return, ast.Raise)


def _guarded_if(model: ScriptModel, node: ast.AST) -> ast.If | None:
    child, parent = node, model.parent(node)
    while isinstance(parent, ast.BoolOp | ast.UnaryOp):
        child, parent = parent, model.parent(parent)
    return parent if isinstance(parent, ast.If) and parent.test is child else None


def only_setup_path(model: ScriptModel, node: ast.AST) -> str | None:
    """Why ``world size > 1`` for this sentinel changes a one-device run, or None."""
    guard = _guarded_if(model, node)
    if guard is None or not guard.orelse or not isinstance(guard.orelse[-1], STOPS):
        return None
    set_here = sorted(
        {
            text
            for stmt in guard.body
            for n in ast.walk(stmt)
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Attribute) and (text := dotted(t)) is not None
        }
    )
    if not set_here:
        return None
    shown = ", ".join(set_here[:3]) + (", ..." if len(set_here) > 3 else "")
    return (
        f"on a single XLA device the rewritten test is False (world size 1), while torchrun "
        f"with one process passed it: the branch, the only place that sets {shown}, is "
        f"skipped and the else returns (line {guard.orelse[-1].lineno}), so code that reads "
        f"them fails; keep the branch for one process too (e.g. test >= 1) or set them in "
        f"the else"
    )
