"""Findings carried over an edit that changed only comments, blank lines or the space
around code, without running a rule: what an editor shows while the full analysis of
the new text runs.

The carried findings are the very findings ``analyze`` gives for the new text, or there
are none (``carry`` returns None and the caller waits for the analysis). Why:

- Every rule reads the syntax tree, node positions and, through ``SourcePositions``, the
  text of some lines (recorded in ``text_reads``). Nothing else of the text reaches a
  rule but ``# xla-lens: ignore`` comments, which the engine reads.
- The edited top-level statements are tokenized before and after the edit. When the
  tokens the parser reads (all but comments and non-logical line ends) are the same, with
  the same columns, the new tree is the old one with some lines renumbered: node for
  node, field for field, column for column. The token lines give the renumbering.
- So a rule's result differs only where it read the text of an edited line (refused:
  such reads and findings on edited lines are checked) or wrote a line number into a
  message (refused when a number in any message could name a renumbered line). What is
  left — spans, related spans, read ranges — is renumbered.

The result also records the renumbered reads and statements, so the next comment edit
can be carried from it in turn.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..rules.base import Finding, Pos, Span
from ..semantic.line_refs import plain_numbers, renumbered
from ..semantic.node_helpers import split_lines
from .analysis import BOM, Analysis
from .incremental import common_prefix, common_suffix, line_breaks

# Tokens the parser never sees: their text and lines are free to change.
_IGNORED = {tokenize.COMMENT, tokenize.NL, tokenize.ENDMARKER}
# Tokens whose position follows from their neighbours' (a trailing comment moves where
# NEWLINE starts); their kind and text still count.
_UNPLACED = {tokenize.NEWLINE, tokenize.DEDENT}
SUPPRESSION_MARK = "xla-lens"


@dataclass(frozen=True)
class Carried:
    """One text's findings, the line ranges its rules read, and its top-level statements'
    0-based (first, last) lines, decorators included."""

    source: str
    findings: tuple[Finding, ...]
    text_reads: tuple[tuple[int, int], ...]
    statements: tuple[tuple[int, int], ...]
    # The text without its BOM split into lines as ``ast`` numbers them (not to be changed).
    lines: list[str]


def carried_from(analysis: Analysis) -> Carried | None:
    """What ``carry`` needs of a finished analysis; None when it has nothing to carry (a
    syntax error, a crashed rule)."""
    model = analysis.model
    if model is None or not analysis.ok or analysis.rule_errors:
        return None
    statements = tuple(
        (
            min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", ())]) - 1,
            (s.end_lineno or s.lineno) - 1,
        )
        for s in model.tree.body
    )
    return Carried(
        analysis.source, tuple(analysis.findings), tuple(model.text_reads), statements, model.lines
    )


def _significant(text: str) -> list[tokenize.TokenInfo] | None:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return [t for t in tokens if t.type not in _IGNORED]


def _token_lines(old: str, new: str) -> dict[int, int] | None:
    """When the two texts give the parser the same tokens at the same columns: each old
    token line (1-based) → its new line, one to one (so line order and "same line" are
    kept both ways); otherwise None."""
    a, b = _significant(old), _significant(new)
    if a is None or b is None or len(a) != len(b):
        return None
    forward: dict[int, int] = {}
    backward: dict[int, int] = {}
    for x, y in zip(a, b, strict=True):
        if x.type != y.type or x.string != y.string:
            return None
        if x.type in _UNPLACED:
            continue
        if x.start[1] != y.start[1] or x.end[1] != y.end[1]:
            return None
        if x.end[0] - x.start[0] != y.end[0] - y.start[0]:
            return None
        # A token spanning lines (a string) moves rigidly: its inner lines too.
        for k in range(x.end[0] - x.start[0] + 1):
            dx, dy = x.start[0] + k, y.start[0] + k
            if forward.setdefault(dx, dy) != dy or backward.setdefault(dy, dx) != dx:
                return None
    return forward


def _line_start(text: str, offset: int) -> int:
    """Offset of the start of the line holding ``offset``."""
    return max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1


def _next_line_start(text: str, offset: int) -> int:
    """Offset of the start of the line after the one holding ``offset`` (the text's end
    when there is none)."""
    ends = [i for i in (text.find("\n", offset), text.find("\r", offset)) if i >= 0]
    if not ends:
        return len(text)
    end = min(ends)
    return end + 2 if text.startswith("\r\n", end) else end + 1


def _at_line_start(text: str, offset: int) -> bool:
    if offset == 0:
        return True
    before = text[offset - 1]
    return before == "\n" or (before == "\r" and text[offset : offset + 1] != "\n")


def _touches(first: int, last: int, edit_first: int, edit_end: int) -> bool:
    """Whether old lines ``first``..``last`` hold an edited line (``edit_first`` ≤ l <
    ``edit_end``) or, for an edit that only inserted lines, the place they went."""
    if edit_end > edit_first:
        return first < edit_end and last >= edit_first
    return first < edit_first <= last


def _written(f: Finding) -> tuple[tuple[str | None, ...], tuple[str | None, ...]]:
    """The finding's texts and its fix's, as the rule wrote them (line references marked)."""
    texts = f.marked or (f.message, f.manual, *(text for _, text in f.related))
    fix = f.fix
    fix_texts = () if fix is None else fix.marked or (fix.title, fix.review_reason)
    return texts, fix_texts


def _renumbered(
    texts: tuple[str | None, ...], named_line: Callable[[int], int | None]
) -> tuple[str | None, ...] | None:
    out = []
    for text in texts:
        moved = None if text is None else renumbered(text, named_line)
        if text is not None and moved is None:
            return None
        out.append(moved)
    return tuple(out)


def _moved(
    f: Finding,
    span: Callable[[Span], Span],
    texts: tuple[str | None, ...],
    fix_texts: tuple[str | None, ...],
) -> Finding:
    """``f`` at its new spans with its texts (line references marked) as given."""
    related = tuple((span(s), t) for (s, _), t in zip(f.related, texts[2:], strict=True))
    fix = f.fix
    if fix is not None:
        fix = replace(fix, title=fix_texts[0], review_reason=fix_texts[1], marked=None)
    return replace(
        f,
        span=span(f.span),
        message=texts[0],
        manual=texts[1],
        related=related,
        fix=fix,
        marked=None,
    )


def carry(previous: Carried, source: str) -> Carried | None:
    """``previous``'s findings for ``source`` (a newer text of the same document, same
    settings and workspace), or None when they might differ from ``analyze(source)``'s."""
    if previous.source == source:
        return previous
    if previous.source.startswith(BOM) != source.startswith(BOM):
        return None
    # Findings count positions in the text without its BOM, as the rules saw it.
    old, document = previous.source.removeprefix(BOM), source
    source = source.removeprefix(BOM)
    start = common_prefix(old, source)
    tail = common_suffix(old, source, min(len(old), len(source)) - start)
    tail_at, new_tail_at = len(old) - tail, len(source) - tail
    if (start and (old[start - 1] == "\r" or source[start - 1] == "\r")) or (
        tail
        and (old[tail_at - 1 : tail_at] == "\r" or source[new_tail_at - 1 : new_tail_at] == "\r")
    ):
        return None  # the edit may join "\r" with a "\n" into one line end
    # Old lines [edit_first, edit_end) became new lines [edit_first, new_end); the lines
    # before are the same, and those after are the same text ``delta`` lines further on.
    # Counted in C: only the edited lines are split.
    old_lines = previous.lines
    edit_first = line_breaks(old, 0, start)
    if tail and _at_line_start(old, tail_at) and _at_line_start(source, new_tail_at):
        edit_end, whole_tail = line_breaks(old, 0, tail_at), tail
    elif tail:
        edit_end = line_breaks(old, 0, tail_at) + 1
        whole_tail = len(old) - _next_line_start(old, tail_at)
    else:
        edit_end, whole_tail = len(old_lines), 0
    edit_end = min(max(edit_end, edit_first), len(old_lines))
    if edit_end == len(old_lines):
        whole_tail = 0
    first_at = _line_start(old, start)
    new_lines = (
        old_lines[:edit_first]
        + split_lines(source[first_at : len(source) - whole_tail])
        + old_lines[edit_end:]
    )
    delta = len(new_lines) - len(old_lines)
    new_end = edit_end + delta
    if new_end < edit_first:
        return None
    edited = "".join(old_lines[edit_first:edit_end]) + "".join(new_lines[edit_first:new_end])
    if SUPPRESSION_MARK in edited:
        return None
    # The top-level statements the edit falls in, tokenized whole (a statement starts and
    # ends the tokenizer at indentation 0 outside any bracket: it tokenizes alone).
    region_first, region_last = edit_first, edit_end - 1
    for first, last in previous.statements:
        if _touches(first, last, edit_first, edit_end):
            region_first, region_last = min(region_first, first), max(region_last, last)
    relative = _token_lines(
        "".join(old_lines[region_first : region_last + 1]),
        "".join(new_lines[region_first : region_last + delta + 1]),
    )
    if relative is None:
        return None
    inside = {region_first + a - 1: region_first + b - 1 for a, b in relative.items()}
    # Whether any line number changed: a message may name one.
    moved = delta != 0 or any(a != b for a, b in inside.items())

    def line(old_line: int) -> int:
        return old_line if old_line < edit_first else old_line + delta

    def span(s: Span) -> Span:
        return Span(Pos(line(s.start.line), s.start.col), Pos(line(s.end.line), s.end.col))

    reads: list[tuple[int, int]] = []
    for first, last in previous.text_reads:
        if _touches(first, last, edit_first, edit_end):
            return None  # a rule read the text of an edited line
        reads.append((line(first), line(last)))

    def named_line(old_line: int) -> int | None:
        """The new number of 1-based old line ``old_line`` that a message names."""
        at = old_line - 1
        if edit_first <= at < edit_end:
            return None if at not in inside else inside[at] + 1
        return line(at) + 1

    findings: list[Finding] = []
    for f in previous.findings:
        spans = [f.span, *(s for s, _ in f.related)]
        if any(_touches(s.start.line, s.end.line, edit_first, edit_end) for s in spans):
            return None
        texts, fix_texts = _written(f)
        if moved:
            every = [t for t in (*texts, *fix_texts) if t is not None]
            if any(n > edit_first for t in every for n in plain_numbers(t)):
                return None  # a plain number may name a line that moved
            moved_texts = _renumbered(texts, named_line)
            moved_fix_texts = _renumbered(fix_texts, named_line)
            if moved_texts is None or moved_fix_texts is None:
                return None  # a named line was edited
            texts, fix_texts = moved_texts, moved_fix_texts
        findings.append(_moved(f, span, texts, fix_texts))
    statements = []
    for first, last in previous.statements:
        if _touches(first, last, edit_first, edit_end):
            if first not in inside or last not in inside:
                return None
            statements.append((inside[first], inside[last]))
        else:
            statements.append((line(first), line(last)))
    return Carried(document, tuple(findings), tuple(reads), tuple(statements), new_lines)


__all__ = ["Carried", "carried_from", "carry"]
