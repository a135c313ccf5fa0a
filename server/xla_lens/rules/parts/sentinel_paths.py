"""XLA202's finding on a "launched by torchrun?" test (``sentinel_finding``), and the case
where its branch is the only way through (held-out 14, vicreg's
``init_distributed_mode``: ``if "RANK" in os.environ and "WORLD_SIZE" in os.environ:`` sets
``args.rank``, ``args.world_size`` and starts the process group, ``else: return``).

Under ``torchrun --nproc_per_node=1`` the sentinel is True, so a single process takes the
branch. Rewritten as ``xr.world_size() > 1`` it is False on one XLA device: the branch is
skipped, the function returns, and code that reads what the branch set fails.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from ...semantic import xla_api
from ...semantic.line_refs import line_ref
from ...semantic.model import Emitter, ScriptModel
from ...semantic.node_helpers import dotted
from ..base import Finding, Fix, Replace, Severity, Target
from .env_sentinel import device_setup_in_branch

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
        f"skipped and the else returns (line {line_ref(guard.orelse[-1].lineno)}), so code that reads "
        f"them fails; keep the branch for one process too (e.g. test >= 1) or set them in "
        f"the else"
    )


def sentinel_finding(
    model: ScriptModel, node: ast.AST, distributed: bool, target: Target, code: str
) -> Finding:
    """XLA202's finding on a "launched by torchrun?" test: ``xr.world_size() > 1`` (or ``== 1``
    for the negated question), for review where the rewrite changes which branch runs."""
    e = Emitter(model)
    test = f"{xla_api.world_size(e, target)} {'>' if distributed else '=='} 1"
    message = (
        f"`{model.segment(node)}` asks whether torchrun launched several processes: the XLA "
        "launcher sets no such env var; the question is whether the world size is above 1"
    )
    fix = Fix(f"Replace with {test}", (Replace(model.span(node), test), *e.imports))
    setup = device_setup_in_branch(model, node, distributed)
    if setup is not None:
        # Under the XLA launcher the env var is unset, so this branch was skipped; the rewrite
        # runs it, and what it sets up is per-rank CUDA placement.
        reason = (
            f"the branch it guards places devices by rank (line {line_ref(setup.lineno)}: "
            f"{model.line_text(setup.lineno - 1).strip()[:50]}), which the XLA launcher skips "
            "today; with the rewrite it runs on every replica: convert that placement first"
        )
        message = f"{message} (fix needs review: {reason})"
        fix = replace(fix, safe=False, review_reason=reason)
    single = only_setup_path(model, node) if distributed else None
    if single is not None:
        reason = single if not fix.review_reason else f"{fix.review_reason}; also {single}"
        if fix.review_reason:
            message = message.replace(fix.review_reason, reason)
        else:
            message = f"{message} (fix needs review: {reason})"
        fix = replace(fix, safe=False, review_reason=reason)
    return Finding(code, message, model.span(node), Severity.WARNING, fix=fix)
