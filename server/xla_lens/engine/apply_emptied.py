"""An ``if`` whose whole body the fixes removed goes too, when its test does nothing else.

``if args.cuda: torch.backends.cudnn.benchmark = True`` loses its only statement to XLA403;
the applier fills the empty block with ``pass`` (a block cannot be empty), which leaves
``if args.cuda: pass`` behind. When the ``if`` has no ``else``/``elif`` and its test only reads
names, attributes and constants (no call, no walrus, no await: nothing it does but decide),
dropping the statement keeps the program's meaning. Comments of the removed statements stay,
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
    """The comment lines to keep when ``node`` is an ``if`` emptied by the fixes (its body
    only the ``pass`` the applier made), with no ``else`` and a test that only reads; None
    when it stays."""
    if not isinstance(node, cst.If) or node.orelse is not None or not _pure(node.test):
        return None
    block = node.body
    if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
        return None
    (only,) = block.body
    if id(only) not in made_pass:
        return None
    kept: list[cst.EmptyLine] = []
    if block.header.comment is not None:
        kept.append(cst.EmptyLine(comment=block.header.comment))
    kept.extend(line for line in only.leading_lines if line.comment is not None)  # type: ignore[attr-defined]
    kept.extend(line for line in block.footer if line.comment is not None)
    return kept
