"""Call-argument edits for engine/apply.py: set a call's arguments, set or remove a keyword,
and parse a replacement expression, keeping the layout and comments of multi-line calls.

libcst keeps the comment after an argument in the whitespace after that argument's comma
(``a,  # c``: ``Comma.whitespace_after.first_line``; the comment lines below it, up to the next
argument, in its ``empty_lines``). So argument edits are made on the call's own ``Arg`` nodes:
a removed argument's comments join the whitespace before it as comment lines, an added one
gets a blank copy of its neighbours' layout, and a call rebuilt from a rule's generated code
(``SetArgs``, a ``Replace`` of a whole call) keeps the nodes of the arguments it still has.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

import libcst as cst

from ..rules.base import EditOp, RemoveKeyword, SetArgs, SetKeyword

_PW = cst.ParenthesizedWhitespace
Ws = cst.BaseParenthesizableWhitespace


def expression(code: str, config: cst.PartialParserConfig | None = None) -> cst.BaseExpression:
    try:
        return cst.parse_expression(code, config=config)
    except cst.ParserSyntaxError:
        # A multi-line receiver segment parses once parenthesised.
        return cst.parse_expression(f"({code})", config=config)


def _args(code: str, config: cst.PartialParserConfig) -> list[cst.Arg]:
    call = cst.parse_expression(f"f({code})", config=config)
    assert isinstance(call, cst.Call)
    return list(call.args)


def edit_call(call: cst.Call, op: EditOp, config: cst.PartialParserConfig) -> cst.Call:
    """``op`` (set the arguments, set or remove a keyword) applied to ``call``."""
    args = list(call.args)
    if isinstance(op, SetArgs):
        new_args = _args(op.code, config)
        return relayout(call, new_args) or call.with_changes(args=new_args)
    index = next(
        (i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == op.name),
        None,
    )
    if isinstance(op, RemoveKeyword):
        return call if index is None else _remove(call, index)
    assert isinstance(op, SetKeyword)
    value = expression(op.code, config)
    if index is not None:
        args[index] = args[index].with_changes(value=replace_expression(args[index].value, value))
        return call.with_changes(args=args)
    new_arg = cst.Arg(
        value=value,
        keyword=cst.Name(op.name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""),
            whitespace_after=cst.SimpleWhitespace(""),
        ),
    )
    return _insert(call, len(args), new_arg)


def replace_expression(old: cst.BaseExpression, new: cst.BaseExpression) -> cst.BaseExpression:
    """``new`` for ``old``; a call for a multi-line call keeps the nodes (and comments) of the
    arguments both have (``mp.spawn(fn,  # entry ...)`` -> ``torch_xla.launch(fn,  # entry``)."""
    if isinstance(old, cst.Call) and isinstance(new, cst.Call) and not new.lpar:
        kept = relayout(old.with_changes(func=new.func), list(new.args))
        if kept is not None:
            return kept
    return new


def relayout(call: cst.Call, new_args: Sequence[cst.Arg]) -> cst.Call | None:
    """``call`` with ``new_args`` on its multi-line layout: an argument it already has (same
    keyword, or the same value) keeps its node, and so its comments; the others are removed
    and added as ``SetKeyword``/``RemoveKeyword`` do. None for a call on one line (the new
    arguments are written as given), when no argument stays, or when the result would not be
    exactly ``new_args`` (the code is the rule's; only layout and comments come from here)."""
    old = list(call.args)
    if not _multiline(call) or not old:
        return None
    match = _match(old, new_args)
    if not match:
        return None
    for i in sorted(set(range(len(old))) - set(match.values()), reverse=True):
        call = _remove(call, i)
    args = list(call.args)
    # The arguments kept, in the new order, each on the place (comma, comments) of the
    # kept argument there: the old node where the new text is the same, else the new text.
    for slot, j in enumerate(sorted(match)):
        was, arg = old[match[j]], new_args[j]
        same_name = _name(was) == _name(arg)
        args[slot] = args[slot].with_changes(
            keyword=was.keyword if same_name else arg.keyword,
            equal=was.equal if same_name else arg.equal,
            star=arg.star,
            value=was.value if _same(was.value, arg.value) else arg.value,
        )
    call = call.with_changes(args=args)
    for j, arg in enumerate(new_args):
        if j not in match:
            call = _insert(call, j, arg)
    expected = cst.Call(func=call.func, args=list(new_args))
    return call if _same(call, expected) else None


def _match(old: Sequence[cst.Arg], new: Sequence[cst.Arg]) -> dict[int, int]:
    """new index -> old index: the same keyword first, then the same value, then the same
    position among the leading positional arguments."""
    match: dict[int, int] = {}
    for j, arg in enumerate(new):
        if arg.keyword is None:
            continue
        for i, o in enumerate(old):
            if o.keyword is not None and o.keyword.value == arg.keyword.value:
                match[j] = i
                break
    for j, arg in enumerate(new):
        if j in match:
            continue
        for i, o in enumerate(old):
            if i not in match.values() and o.star == arg.star and _same(o.value, arg.value):
                match[j] = i
                break
    for j, arg in enumerate(new):
        # The same place in the positional arguments (``"cuda",  # device`` -> ``"xla"``).
        o = old[j] if j < len(old) else None
        if j in match or j in match.values() or o is None or _name(arg) or _name(o):
            continue
        if not arg.star and not o.star:
            match[j] = j
    return match


def _name(arg: cst.Arg) -> str | None:
    return arg.keyword.value if arg.keyword is not None else None


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _same(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """The same expression up to layout and comments."""
    try:
        return ast.dump(ast.parse(f"({_code(a)})", mode="eval")) == ast.dump(
            ast.parse(f"({_code(b)})", mode="eval")
        )
    except (SyntaxError, ValueError):
        return False


def _multiline(call: cst.Call) -> bool:
    spaces = [call.whitespace_before_args, *(_after(a) for a in call.args)]
    return any(isinstance(ws, _PW) for ws in spaces)


def _after(arg: cst.Arg) -> Ws:
    """The whitespace after ``arg`` (after its comma where it has one)."""
    return (
        arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else arg.whitespace_after_arg
    )


def _set_after(arg: cst.Arg, ws: Ws) -> cst.Arg:
    if isinstance(arg.comma, cst.Comma):
        return arg.with_changes(comma=arg.comma.with_changes(whitespace_after=ws))
    return arg.with_changes(whitespace_after_arg=ws)


def _merge(a: Ws, b: Ws, first: bool) -> Ws:
    """The whitespace ``a`` before a removed argument and ``b`` after it, as one: the comments
    of both (``b``'s trailing comment as a line where the removed argument stood), the layout
    of what follows. ``first``: the removed argument followed the call's ``(``."""
    if isinstance(a, _PW) and isinstance(b, _PW):
        comment = b.first_line.comment
        moved = [cst.EmptyLine(a.indent, a.last_line, comment)] if comment is not None else []
        return a.with_changes(
            empty_lines=[*a.empty_lines, *moved, *b.empty_lines],
            indent=b.indent,
            last_line=b.last_line,
        )
    if isinstance(a, _PW):
        return a
    if isinstance(b, _PW):
        return b
    return a if first else b


def _blank(ws: Ws, simple: str) -> Ws:
    """``ws``'s layout without its comments (``simple`` for whitespace on one line)."""
    if isinstance(ws, _PW):
        return cst.ParenthesizedWhitespace(indent=ws.indent, last_line=ws.last_line)
    return cst.SimpleWhitespace(simple)


def _remove(call: cst.Call, i: int) -> cst.Call:
    """``call`` without its argument ``i``; that argument's comments stay where it was."""
    args = list(call.args)
    removed = args.pop(i)
    if i == 0:
        ws = _merge(call.whitespace_before_args, _after(removed), first=True)
        return call.with_changes(args=args, whitespace_before_args=ws)
    prev = args[i - 1]
    ws = _merge(_after(prev), _after(removed), first=False)
    if i == len(args) and not isinstance(removed.comma, cst.Comma):
        # The new last argument takes over the removed one's lack of a trailing comma.
        prev = prev.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=ws)
    else:
        prev = _set_after(prev, ws)
    args[i - 1] = prev
    return call.with_changes(args=args)


def _insert(call: cst.Call, i: int, arg: cst.Arg) -> cst.Call:
    """``call`` with ``arg`` as its argument ``i``, laid out like its neighbours; the comment
    after the argument before it stays there."""
    args = list(call.args)
    arg = arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    if not args:
        return call.with_changes(args=[arg])
    if i < len(args):
        before = call.whitespace_before_args if i == 0 else _after(args[i - 1])
        args.insert(i, arg.with_changes(comma=cst.Comma(whitespace_after=_blank(before, " "))))
        return call.with_changes(args=args)
    last = args[-1]
    closing = _after(last)
    sep = _after(args[-2]) if len(args) > 1 else call.whitespace_before_args
    if (
        isinstance(closing, _PW)
        and not isinstance(sep, _PW)
        and closing.first_line.comment is None
        and not closing.empty_lines
    ):
        # Arguments on one line, the ``)`` on the next: the new one joins that line.
        between = sep if len(args) > 1 else cst.SimpleWhitespace(" ")
    elif isinstance(closing, _PW):
        # The last argument's comments stay after it; the new one goes on its own line.
        like = sep if isinstance(sep, _PW) else closing
        between: Ws = closing.with_changes(indent=like.indent, last_line=like.last_line)
    else:
        between = sep if len(args) > 1 and not isinstance(sep, _PW) else cst.SimpleWhitespace(" ")
    if isinstance(last.comma, cst.Comma):
        # The new last argument takes over the trailing comma (multi-line layouts keep it).
        new = arg.with_changes(comma=last.comma.with_changes(whitespace_after=_blank(closing, "")))
        last = last.with_changes(comma=last.comma.with_changes(whitespace_after=between))
    else:
        new = arg.with_changes(whitespace_after_arg=_blank(closing, ""))
        last = last.with_changes(
            comma=cst.Comma(whitespace_after=between), whitespace_after_arg=cst.SimpleWhitespace("")
        )
    return call.with_changes(args=[*args[:-1], last, new])
