"""Comments of a statement that a fix replaces, for engine/apply.py.

A ``ReplaceStatement`` often keeps part of what it replaces: XLA405 drops
``with torch.cuda.device(i):`` and keeps the body. The rule writes the body's code, but the
comments libcst keeps outside statements (the ``with`` line's trailing comment, the lines
above the first body statement, those after the last one) are not in it, and a comment the
replacement code does carry above or below its statements lands in libcst's module header or
footer, not in a statement. Every comment of the replaced statement that the replacement does
not carry is kept: those after the statement's last line below the replacement, the others
above it. Comment lines render at the indentation of the block they end up in, so they are
dedented with the body.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter

import libcst as cst


def replacement(
    code: str, config: cst.PartialParserConfig | None
) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
    """The statements of ``code`` (its leading comment lines above the first one) and the
    comment lines that follow its last statement."""
    module = cst.parse_module(textwrap.dedent(code).strip("\n") + "\n", config=config)
    body = list(module.body)
    header = [line for line in module.header if line.comment is not None]
    if body and header and hasattr(body[0], "leading_lines"):
        body[0] = body[0].with_changes(leading_lines=[*header, *body[0].leading_lines])
    tail = [line for line in module.footer if line.comment is not None]
    return body, tail


def replace_compound(
    upd: cst.BaseStatement, code: str, config: cst.PartialParserConfig | None
) -> tuple[cst.BaseStatement | None, list[cst.BaseStatement], list[cst.EmptyLine]]:
    """``upd`` replaced by ``code``: its first statement, the others, and the comment lines to
    carry below them. The replaced statement's comments stay (``keep``)."""
    new, tail = replacement(code, config)
    new, above, below = keep(upd, new, tail)
    if not new:
        # Its leading lines are carried by the caller, as for a removed statement.
        return None, [], [*above, *below]
    first = new[0].with_changes(leading_lines=[*upd.leading_lines, *above, *new[0].leading_lines])
    return first, new[1:], below


def keep(
    replaced: cst.BaseStatement, new: list[cst.BaseStatement], tail: list[cst.EmptyLine]
) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine], list[cst.EmptyLine]]:
    """``new`` (the code replacing ``replaced``, ``tail`` its comment lines after it) with the
    comments of ``replaced`` it does not carry: (``new``, lines above it, lines below it).
    Those after the statement's last line (the footers of its last block, of that block's last
    statement's last block, inwards) go at the same depth below the new code: an unwrapped
    body's own closing comments stay in its blocks. ``replaced``'s leading lines are the
    caller's."""
    # A rule may join several comments into one trailing comment (XLA101's picker:
    # ``device = ...  # pick the device  # the GPU``): each part counts as carried.
    carried = Counter(
        part for node in [*new, *tail] for c in _comments(node) for part in _parts(c.value)
    )
    depth = {id(c): d for d, c in _closing_comments(replaced)}
    own = {id(c) for line in replaced.leading_lines for c in _comments(line)}
    above: list[cst.EmptyLine] = []
    by_depth: dict[int, list[cst.EmptyLine]] = {}
    for comment in _comments(replaced):
        if id(comment) in own:
            continue
        if carried[comment.value] > 0:
            carried[comment.value] -= 1
            continue
        line = _line(comment)
        if id(comment) in depth:
            by_depth.setdefault(depth[id(comment)], []).append(line)
        else:
            above.append(line)
    below = [*tail, *by_depth.pop(0, [])]
    if not new:
        return [], above, [*below, *(line for d in sorted(by_depth) for line in by_depth[d])]
    last = new[-1]
    for d in sorted(by_depth, reverse=True):
        blocks = _spine(last)
        if not blocks:
            below.extend(by_depth[d])  # (outermost first: deeper ones were placed already)
            continue
        block = blocks[min(d, len(blocks)) - 1]
        last = last.deep_replace(block, block.with_changes(footer=[*block.footer, *by_depth[d]]))
    return [*new[:-1], last], above, below


def _parts(comment: str) -> list[str]:
    """``# a  # b`` -> ``["# a  # b", "# a", "# b"]``: the comment and, when a rule joined
    several, each of them."""
    parts = [p.rstrip() for p in re.split(r"\s+(?=#)", comment) if p.strip()]
    return [comment, *parts] if len(parts) > 1 else [comment]


def keep_trailing(
    line: cst.SimpleStatementLine, new: list[cst.BaseStatement], tail: list[cst.EmptyLine]
) -> list[cst.BaseStatement]:
    """``new`` replacing all of ``line``, with the comments of ``line`` the new code does not
    carry: its trailing comment trailing the first new line when that has none, the others
    (those inside a multi-line call: ``DataLoader(ds,  # the data``) as lines above it.
    ``line``'s leading lines are the caller's."""
    carried = Counter(
        part for node in [*new, *tail] for c in _comments(node) for part in _parts(c.value)
    )
    own = {id(c) for e in line.leading_lines for c in _comments(e)}
    trailing = line.trailing_whitespace.comment
    above: list[cst.EmptyLine] = []
    keep_trailing_comment = False
    for comment in _comments(line):
        if id(comment) in own:
            continue
        if carried[comment.value] > 0:
            carried[comment.value] -= 1
        elif comment is trailing:
            keep_trailing_comment = True
        else:
            above.append(_line(comment))
    first = new[0]
    if keep_trailing_comment:
        if isinstance(first, cst.SimpleStatementLine) and first.trailing_whitespace.comment is None:
            first = first.with_changes(trailing_whitespace=line.trailing_whitespace)
        else:
            above.extend(trailing_comment_line(line))
    if above:
        first = first.with_changes(leading_lines=[*first.leading_lines, *above])
    return [first, *new[1:]]


def trailing_comment_line(stmt: cst.BaseStatement) -> list[cst.EmptyLine]:
    """The trailing comment of a removed line (``scaler.update()  # every step``) as a line."""
    trailing = getattr(stmt, "trailing_whitespace", None)
    comment = getattr(trailing, "comment", None)
    return [] if comment is None else [_line(comment)]


def own_lines(stmt: cst.BaseStatement) -> list[cst.EmptyLine]:
    """The comments of a removed statement as lines, but those above it (its leading lines,
    kept by the caller): its trailing comment, those inside a multi-line call, in its blocks."""
    own = {id(c) for e in getattr(stmt, "leading_lines", ()) for c in _comments(e)}
    return [_line(c) for c in _comments(stmt) if id(c) not in own]


def lost(before: cst.CSTNode, after: cst.CSTNode) -> list[cst.EmptyLine]:
    """The comments of ``before`` (an expression before an edit) that ``after`` does not hold,
    as lines: an expression rewritten from generated code can keep no comment inside it."""
    carried = Counter(part for c in _comments(after) for part in _parts(c.value))
    out = []
    for comment in _comments(before):
        if carried[comment.value] > 0:
            carried[comment.value] -= 1
        else:
            out.append(_line(comment))
    return out


def _line(comment: cst.Comment) -> cst.EmptyLine:
    return cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=comment)


class _Comments(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.Comment] = []

    def visit_Comment(self, node: cst.Comment) -> None:
        self.found.append(node)


def _comments(node: cst.CSTNode) -> list[cst.Comment]:
    """``node``'s comments in source order (libcst visits children in the order it prints them)."""
    visitor = _Comments()
    node.visit(visitor)
    return visitor.found


def _closing_comments(stmt: cst.CSTNode) -> list[tuple[int, cst.Comment]]:
    """The comments after ``stmt``'s last line, with the depth of the block whose footer holds
    them (0: the block ending ``stmt``, 1: the one ending that block's last statement, ...)."""
    return [
        (d, c)
        for d, block in enumerate(_spine(stmt))
        for line in block.footer
        for c in _comments(line)
    ]


def _spine(stmt: cst.CSTNode) -> list[cst.IndentedBlock]:
    """The blocks that end ``stmt``, outermost first: its last block, that block's last
    statement's last block, and so on."""
    out: list[cst.IndentedBlock] = []
    block = _last_block(stmt)
    while isinstance(block, cst.IndentedBlock):
        out.append(block)
        block = _last_block(block.body[-1]) if block.body else None
    return out


def _last_block(stmt: cst.CSTNode) -> cst.BaseSuite | None:
    """The block that ends ``stmt`` (an ``else``/``finally`` where there is one)."""
    if isinstance(stmt, cst.If):
        return _last_block(stmt.orelse) if stmt.orelse is not None else stmt.body
    if isinstance(stmt, cst.Try | cst.TryStar):
        last = stmt.finalbody or stmt.orelse or (stmt.handlers[-1] if stmt.handlers else None)
        return last.body if last is not None else stmt.body
    if isinstance(stmt, cst.For | cst.While):
        return stmt.orelse.body if stmt.orelse is not None else stmt.body
    if isinstance(stmt, cst.Match):
        return stmt.cases[-1].body if stmt.cases else None
    body = getattr(stmt, "body", None)
    return body if isinstance(body, cst.BaseSuite) else None
