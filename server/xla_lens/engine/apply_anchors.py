"""Where an ``ast`` span lands in the libcst tree, and how a replacement keeps its meaning there.

Both trees report an expression's span without its parentheses, with two exceptions in
``ast``: a parenthesised tuple's or generator's span covers its innermost pair (``(a, b)``),
and a generator that is a call's only argument takes the call's parentheses
(``sum(x for x in xs)``). These
get a second anchor here. A replacement whose expression binds more loosely than the one it
replaces (``a if b else c`` for a name inside ``x if t else y``, a bare tuple for a call
argument) is parenthesised unless its slot accepts any expression, so the new code never
re-associates with its neighbours.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ..rules.base import Pos, Span

# Python's binding strength, loosest first (the language reference's precedence table).
ATOM = 20
_BINARY = {
    cst.BitOr: 7,
    cst.BitXor: 8,
    cst.BitAnd: 9,
    cst.LeftShift: 10,
    cst.RightShift: 10,
    cst.Add: 11,
    cst.Subtract: 11,
    cst.Multiply: 12,
    cst.Divide: 12,
    cst.FloorDivide: 12,
    cst.Modulo: 12,
    cst.MatrixMultiply: 12,
    cst.Power: 14,
}


def precedence(node: cst.CSTNode) -> int:
    """How tightly ``node`` binds as written (parenthesised: like an atom)."""
    if getattr(node, "lpar", None):
        return ATOM
    if isinstance(node, cst.Tuple | cst.Yield | cst.NamedExpr | cst.StarredElement):
        return 0
    if isinstance(node, cst.GeneratorExp):
        return 0  # bare only as a call's sole argument
    if isinstance(node, cst.Lambda):
        return 1
    if isinstance(node, cst.IfExp):
        return 2
    if isinstance(node, cst.BooleanOperation):
        return 3 if isinstance(node.operator, cst.Or) else 4
    if isinstance(node, cst.UnaryOperation):
        return 5 if isinstance(node.operator, cst.Not) else 13
    if isinstance(node, cst.Comparison):
        return 6
    if isinstance(node, cst.BinaryOperation):
        return _BINARY.get(type(node.operator), 7)
    if isinstance(node, cst.Await):
        return 15
    return ATOM


# Slots that take any expression, a bare tuple included: ``x = <>``, ``return <>``, ``<>``
# as a statement, ``m[<>]``.
_ANY = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Expr, cst.Index)
# Slots that take any expression but a bare tuple, ``yield`` or ``:=`` (a "test" in the
# grammar): call arguments, list/set/dict items, conditions, defaults, an if-else's else.
_TEST = (
    cst.Arg,
    cst.Element,
    cst.DictElement,
    cst.If,
    cst.While,
    cst.Assert,
    cst.Param,
    cst.WithItem,
    cst.Decorator,
    cst.Lambda,
)


def fits(
    parent: cst.CSTNode | None, original: cst.CSTNode, stood: int, new: cst.BaseExpression
) -> bool:
    """``new`` (without parentheses of its own) can stand where ``original`` stood in
    ``parent``, binding ``stood`` tightly there, and still parse as one operand, as
    ``original`` did."""
    strength = precedence(new)
    if isinstance(parent, _ANY):
        return True
    if (
        isinstance(parent, cst.UnaryOperation)
        and isinstance(parent.operator, cst.Not)
        and isinstance(new, cst.Comparison)
    ):
        # ``not a > 1`` is ``not (a > 1)``, but reads as ``(not a) > 1``: written as meant.
        return False
    if strength == 0:
        # A bare tuple for a bare tuple (``for i in a, b``), a generator for the generator
        # that is a call's sole argument; a bare tuple there would pass several arguments.
        return stood == 0 and type(new) is type(original)
    if strength >= stood:
        return True
    if isinstance(parent, _TEST) or (isinstance(parent, cst.IfExp) and parent.orelse is original):
        return True
    return strength >= _needed(parent, original, stood)


def _needed(parent: cst.CSTNode | None, original: cst.CSTNode, stood: int) -> int:
    """How tightly an operand must bind to stand unparenthesised where ``original`` is
    (``stood`` where the grammar is not modelled here: what stood there is known to fit)."""
    if isinstance(parent, cst.BinaryOperation):
        level = _BINARY.get(type(parent.operator), stood)
        if isinstance(parent.operator, cst.Power):
            return level + 1 if parent.left is original else 13  # ``2 ** -1``
        return level if parent.left is original else level + 1  # left-associative
    if isinstance(parent, cst.BooleanOperation):
        level = 3 if isinstance(parent.operator, cst.Or) else 4
        return level if parent.left is original else level + 1
    if isinstance(parent, cst.UnaryOperation):
        return 5 if isinstance(parent.operator, cst.Not) else 13
    if isinstance(parent, cst.Comparison | cst.ComparisonTarget):
        return 7  # ``a < (b < c)`` is not the chain ``a < b < c``
    return stood


def parenthesised(new: cst.BaseExpression) -> cst.BaseExpression:
    return new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def sole_generator_span(
    call: cst.Call, span_of: Callable[[cst.CSTNode], Span | None]
) -> tuple[cst.CSTNode, Span] | None:
    """``sum(x for x in xs)``: the generator and the span ``ast`` gives it (the call's
    parentheses). None for any other call."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    gen = call.args[0].value
    if not isinstance(gen, cst.GeneratorExp) or gen.lpar:
        return None
    func, whole = span_of(call.func), span_of(call)
    gap = call.whitespace_after_func
    if func is None or whole is None or not isinstance(gap, cst.SimpleWhitespace):
        return None
    if "\n" in gap.value or "\r" in gap.value:
        return None
    start = Pos(func.end.line, func.end.col + len(gap.value))
    return gen, Span(start, whole.end)


def paren_span(
    node: cst.Tuple | cst.GeneratorExp, span_of: Callable[[cst.CSTNode], Span | None]
) -> Span | None:
    """``(a, b)``, ``(x for x in xs)``: the span ``ast`` gives a parenthesised tuple or
    generator (its innermost pair)."""
    if not node.lpar or not node.rpar:
        return None
    left, right = span_of(node.lpar[-1]), span_of(node.rpar[0])
    if left is None or right is None:
        return None
    return Span(left.start, right.end)


def in_place(
    original: cst.CSTNode,
    updated: cst.CSTNode,
    parent: cst.CSTNode | None,
    new: cst.BaseExpression,
    took_parens: bool,
) -> cst.CSTNode:
    """``new`` in place of ``updated`` (``original`` before its children's edits, held by
    ``parent``): inside the parentheses that stay around it (those outside the span; with
    ``took_parens`` the innermost pair was inside it), parenthesised when it binds more
    loosely than its place needs, and an element of its tuple/list when it replaces ``*xs``."""
    lpar = list(getattr(updated, "lpar", ()))
    rpar = list(getattr(updated, "rpar", ()))
    if took_parens:
        lpar, rpar = lpar[:-1], rpar[1:]
    if lpar or rpar:
        try:
            new = new.with_changes(lpar=lpar, rpar=rpar)
        except TypeError:
            pass
    elif _bare_generator(original) and isinstance(new, cst.GeneratorExp):
        new = new.with_changes(lpar=[], rpar=[])  # the call's parentheses hold it
    elif not getattr(new, "lpar", None):
        stood = ATOM if took_parens else precedence(original)
        if not fits(parent, original, stood, new):
            new = parenthesised(new)
    if isinstance(original, cst.StarredElement) and not isinstance(new, cst.StarredElement):
        return cst.Element(value=new, comma=updated.comma)  # type: ignore[attr-defined]
    return new


def _bare_generator(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.GeneratorExp) and not node.lpar
