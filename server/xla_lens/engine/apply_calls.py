"""Call-argument edits for engine/apply.py: set a call's arguments, set or remove a keyword
(keeping the layout of multi-line argument lists), and parse a replacement expression."""

from __future__ import annotations

import libcst as cst

from ..rules.base import EditOp, RemoveKeyword, SetArgs, SetKeyword


def expression(code: str, config: cst.PartialParserConfig | None = None) -> cst.BaseExpression:
    try:
        return cst.parse_expression(code, config=config)
    except cst.ParserSyntaxError:
        # A multi-line receiver segment parses once parenthesised.
        return cst.parse_expression(f"({code})", config=config)


def _args(code: str) -> list[cst.Arg]:
    call = cst.parse_expression(f"f({code})")
    assert isinstance(call, cst.Call)
    return list(call.args)


def edit_call(call: cst.Call, op: EditOp, config: cst.PartialParserConfig) -> cst.Call:
    """``op`` (set the arguments, set or remove a keyword) applied to ``call``."""
    args = list(call.args)
    if isinstance(op, SetArgs):
        return call.with_changes(args=_args(op.code))
    index = next(
        (i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == op.name),
        None,
    )
    if isinstance(op, RemoveKeyword):
        if index is None:
            return call
        removed = args.pop(index)
        if index == len(args) and args:
            # The new last argument takes over the removed one's trailing comma
            # (or lack of it), so multi-line layouts stay as they were.
            args[-1] = args[-1].with_changes(comma=removed.comma)
        return call.with_changes(args=args)
    assert isinstance(op, SetKeyword)
    value = expression(op.code, config)
    if index is not None:
        args[index] = args[index].with_changes(value=value)
        return call.with_changes(args=args)
    new_arg = cst.Arg(
        value=value,
        keyword=cst.Name(op.name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""),
            whitespace_after=cst.SimpleWhitespace(""),
        ),
    )
    if args and isinstance(args[-1].comma, cst.Comma):
        last = args[-1]
        separator = (
            args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else None
        )
        new_arg = new_arg.with_changes(comma=last.comma)
        if separator is not None:
            args[-1] = last.with_changes(comma=separator)
        else:
            args[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
    args.append(new_arg)
    return call.with_changes(args=args)
