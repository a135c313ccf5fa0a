"""An ``if`` whose whole body the fixes removed goes too, when its test does nothing else.

``if args.cuda: torch.backends.cudnn.benchmark = True`` loses its only statement to XLA403;
the applier fills the empty block with ``pass`` (a block cannot be empty), which leaves
``if args.cuda: pass`` behind. When the ``if`` has no ``else``/``elif`` and its test only reads
names, attributes and constants (no call, no walrus, no await: nothing it does but decide),
dropping the statement keeps the program's meaning; the same for an ``if`` whose ``elif`` and
``else`` blocks were all emptied too. Comments of the removed statements stay,
on their own lines where the ``if`` was.
"""

from __future__ import annotations

import libcst as cst

# Expressions that only read: evaluating them has no effect besides their value.
_PURE = (
    cst.Name,
    cst.Attribute,
    cst.Integer,
    cst.Float,
    cst.SimpleString,
    cst.Comparison,
    cst.BooleanOperation,
    cst.UnaryOperation,
)


def _pure(expr: cst.BaseExpression) -> bool:
    if not isinstance(expr, _PURE):
        return False
    if isinstance(expr, cst.Attribute):
        return _pure(expr.value)
    if isinstance(expr, cst.Comparison):
        return _pure(expr.left) and all(_pure(c.comparator) for c in expr.comparisons)
    if isinstance(expr, cst.BooleanOperation):
        return _pure(expr.left) and _pure(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _pure(expr.expression)
    return True


def dropped_if(node: cst.BaseStatement, made_pass: set[int]) -> list[cst.EmptyLine] | None:
    """The comment lines to keep when ``node`` is an ``if`` emptied by the fixes (each block
    only the ``pass`` the applier made: its body, and its ``elif``/``else`` blocks if any) whose
    tests only read; None when it stays. SSL4MIS's ``if not args.deterministic:`` with the
    cudnn flags in both branches (held-out 128) left ``pass`` / ``else: pass`` before."""
    if not isinstance(node, cst.If) or not _pure(node.test):
        return None
    kept: list[cst.EmptyLine] = []
    if not _emptied(node.body, made_pass, kept):
        return None
    orelse = node.orelse
    if orelse is None:
        return kept
    if isinstance(orelse, cst.If):  # ``elif``: dropped with the rest, or the chain stays
        rest = dropped_if(orelse, made_pass)
        return None if rest is None else kept + rest
    kept.extend(line for line in orelse.leading_lines if line.comment is not None)
    return kept if _emptied(orelse.body, made_pass, kept) else None


def _emptied(block: cst.BaseSuite, made_pass: set[int], kept: list[cst.EmptyLine]) -> bool:
    """``block`` holds only the ``pass`` the applier made; its comments go to ``kept``."""
    if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
        return False
    (only,) = block.body
    if id(only) not in made_pass:
        return False
    if block.header.comment is not None:
        kept.append(cst.EmptyLine(comment=block.header.comment))
    kept.extend(line for line in only.leading_lines if line.comment is not None)  # type: ignore[attr-defined]
    kept.extend(line for line in block.footer if line.comment is not None)
    return True
