"""XLA113's master-first cache: output that only the master reaches, with no rank check
around it.

Data-preparation code builds a cache once and lets the other replicas read it:

    if not xm.is_master_ordinal():            # (or ``if args.local_rank not in [-1, 0]:``)
        xm.rendezvous("cache")                # the others wait here...
    if os.path.exists(path):
        data = torch.load(path)
    else:
        data = build()
        torch.save(data, path)                # ...so only the master gets here
    if xm.is_master_ordinal():                # (or ``if args.local_rank == 0:``)
        xm.rendezvous("cache")                # and then releases them: they find the file

Released, the other replicas find the file and take the other branch. A write in the branch
run only when the file is missing, between a rank-conditioned barrier before it and one after
it in the same block (or a block around it), runs on the master only. A write every released
replica reaches (outside the "file missing" branch) is not covered.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ...semantic.model import SCOPE_TYPES, ScriptModel, dotted

BARRIERS = frozenset({"rendezvous", "barrier", "wait_for_everyone"})
EXISTS = frozenset({"exists", "isfile", "is_file", "isdir", "is_dir"})
STATEMENT_LISTS = ("body", "orelse", "finalbody")


def master_first_branch(
    model: ScriptModel, node: ast.AST, mentions_rank: Callable[[ast.AST], bool]
) -> ast.If | None:
    """The ``if <file exists>`` whose "missing" branch runs ``node``, when it sits between a
    barrier only the other replicas wait at and one the master passes after the write
    (``mentions_rank`` says which tests are rank checks); None otherwise."""
    child: ast.AST = node
    for a in model.ancestors(node):
        if isinstance(a, SCOPE_TYPES):
            return None
        if (
            isinstance(a, ast.If)
            and _in_missing_branch(a, child)
            and _bracketed(model, a, mentions_rank)
        ):
            return a
        child = a
    return None


def _in_missing_branch(stmt: ast.If, child: ast.AST) -> bool:
    negated = _exists_polarity(stmt.test, False)
    if len(negated) != 1:
        return False  # no existence test, or one tested both ways
    # ``if exists(p) [and not overwrite]: load  else: build``; ``if not exists(p): build``.
    branch = stmt.body if negated == {True} else stmt.orelse
    return any(s is child for s in branch)


def _exists_polarity(expr: ast.AST, negated: bool) -> set[bool]:
    """Whether each existence test in ``expr`` is read negated (``not os.path.exists(p)``)."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return _exists_polarity(expr.operand, not negated)
    if isinstance(expr, ast.BoolOp):
        out: set[bool] = set()
        for v in expr.values:
            out |= _exists_polarity(v, negated)
        return out
    if isinstance(expr, ast.Call):
        name = dotted(expr.func) or ""
        if name.rpartition(".")[2] in EXISTS:
            return {negated}
    return set()


def _bracketed(
    model: ScriptModel, stmt: ast.stmt, mentions_rank: Callable[[ast.AST], bool]
) -> bool:
    """Whether a rank-conditioned barrier comes before ``stmt`` (or a statement around it, in
    its function) and another one after it, in the same block."""
    current: ast.AST = stmt
    for parent in model.ancestors(stmt):
        block = _block_of(parent, current)
        if block is not None:
            at = next(i for i, s in enumerate(block) if s is current)
            before = any(_rank_barrier(model, s, mentions_rank) for s in block[:at])
            after = any(_rank_barrier(model, s, mentions_rank) for s in block[at + 1 :])
            if before and after:
                return True
        if isinstance(parent, SCOPE_TYPES):
            return False
        current = parent
    return False


def _block_of(parent: ast.AST, child: ast.AST) -> list[ast.stmt] | None:
    for field in STATEMENT_LISTS:
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is child for s in block):
            return block
    return None


def _rank_barrier(
    model: ScriptModel, stmt: ast.stmt, mentions_rank: Callable[[ast.AST], bool]
) -> bool:
    """``if <rank check>: <barrier>`` with nothing else in it: some replicas wait there."""
    if not isinstance(stmt, ast.If) or stmt.orelse or not mentions_rank(stmt.test):
        return False
    return all(
        isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and _is_barrier(model, s.value)
        for s in stmt.body
    )


def _is_barrier(model: ScriptModel, call: ast.Call) -> bool:
    name = model.call_name(call) or dotted(call.func) or ""
    return name.rpartition(".")[2] in BARRIERS
