"""XLA403's seed fix when the CUDA seed sits under a CUDA availability guard:

    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.manual_seed_all(args.seed)

(held-out 18: bearpaw's cifar.py; ViT-pytorch's ``if args.n_gpu > 0:``). The guard is False on
an XLA host, so ``torch_xla.manual_seed`` rewritten in place would never run and the XLA
device would stay unseeded. The script meant "seed the accelerator when there is one"; on an
XLA host there always is, so a guard holding only the seed is replaced by the XLA seed
itself. A guard holding more keeps its other statements: the fix is then offered for review.
"""

from __future__ import annotations

import ast

from ...semantic import device_sites as sites
from ...semantic.model import Emitter, ScriptModel
from ..base import Fix, Replace, ReplaceStatement


def seed_fix(model: ScriptModel, call: ast.Call, code: str, e: Emitter) -> tuple[Fix, str]:
    """The fix for a CUDA seed call, and what the finding adds about its guard ("" when it
    runs unguarded)."""
    title = f"Seed the XLA device: {code}"
    stmt = model.enclosing_statement(call)
    guard = model.parent(stmt)
    if not (isinstance(guard, ast.If) and stmt in guard.body and _guards(model, guard)):
        return Fix(title, (Replace(model.span(call), code), *e.imports)), ""
    test = model.segment(guard.test)[:50]
    if (
        len(guard.body) == 1
        and not guard.orelse
        and isinstance(stmt, ast.Expr)
        and stmt.value is call
        and not _has_comment(model, guard)
    ):
        note = f"; it sits under `if {test}:`, False on an XLA host, so the fix seeds unguarded"
        return Fix(
            f"{title}, out of `if {test}:`", (ReplaceStatement(model.span(guard), code), *e.imports)
        ), note
    reason = (
        f"it sits under `if {test}:`, False on an XLA host: move the XLA seed out of that "
        "block, or it never runs"
    )
    fix = Fix(
        title, (Replace(model.span(call), code), *e.imports), safe=False, review_reason=reason
    )
    return fix, f" (fix needs review: {reason})"


def _guards(model: ScriptModel, node: ast.If) -> bool:
    # The availability guards of the script (``if use_cuda:``, ``if args.n_gpu > 0:``...).
    span = model.span(node.body[0])
    return any(s == span for s, _test, _kind in sites.availability_guards(model))


def _has_comment(model: ScriptModel, node: ast.If) -> bool:
    return bool(sites.comments_in(model, node))  # replacing the block would drop them
