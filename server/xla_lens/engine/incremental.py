"""Re-parse only what an edit changed: the top-level statement it falls in (with the blank
and comment lines around it), splicing the result into the previous syntax tree.

The result is the tree ``ast.parse`` gives for the whole new text, node for node and
position for position, or None when that cannot be guaranteed (then the caller parses the
whole text). Why the splice is exact:

- Python's tokenizer is at the start of a fresh logical line, indentation level 0, no open
  bracket, at the first line of every top-level statement and on the line after its last;
  what it produces from there depends only on the text from there on. The region re-parsed
  runs from the line after the previous statement to the line before the next one, so the
  text before it is unchanged, and the text after it is unchanged when it still ends a
  logical line at indentation 0 — which the region parsing on its own proves (an unclosed
  bracket, string, block header or a trailing backslash fails to parse at its end).
- The parser reads a file as a sequence of statements; no statement's tree depends on
  another's (``ast.parse`` runs none of the compiler's context checks such as ``return``
  outside a function or ``__future__`` placement — the tests pin this).
- The region is parsed behind as many empty lines as precede it, so every node gets its
  line in the file and its column is unchanged (columns count UTF-8 bytes from the line
  start, and the region holds whole lines). The coding cookie is only read from the first
  two lines, which are then the file's own two lines or empty ones.
- When the edit changes the number of lines, every later statement moves: the region is
  then parsed through to the end of the file (still skipping the statements before it).

Statements before the region are shared, not copied, with the previous tree: nothing in
xla-lens mutates a parsed tree.
"""

from __future__ import annotations

import ast
import bisect
import re
import warnings
from dataclasses import dataclass, field

from ..semantic.chunked_parse import parse_in_chunks

_LINE_START = re.compile(r"\r\n|\r|\n")


@dataclass
class ParsedText:
    """A text and the tree ``ast.parse`` gave for it (the text without its BOM)."""

    text: str
    tree: ast.Module
    _line_starts: list[int] | None = field(default=None, repr=False)
    _statement_lines: list[tuple[int, int]] | None = field(default=None, repr=False)

    @property
    def line_starts(self) -> list[int]:
        """Offset of each line's first character (Python's line ends: \\r\\n, \\r, \\n)."""
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in _LINE_START.finditer(self.text)]
        return self._line_starts

    @property
    def statement_lines(self) -> list[tuple[int, int]]:
        """0-based (first, last) line of each top-level statement, decorators included."""
        if self._statement_lines is None:
            self._statement_lines = [
                (
                    min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", ())]) - 1,
                    (s.end_lineno or s.lineno) - 1,
                )
                for s in self.tree.body
            ]
        return self._statement_lines

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset) - 1


def common_prefix(a: str, b: str) -> int:
    """Length of the common prefix; bisection on slices, so comparisons run in C."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the common suffix, at most ``limit``."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def line_breaks(text: str, start: int = 0, end: int | None = None) -> int:
    """Line ends (\\r\\n, \\r, \\n) in ``text[start:end]``, counted in C."""
    stop = len(text) if end is None else end
    return (
        text.count("\n", start, stop)
        + text.count("\r", start, stop)
        - text.count("\r\n", start, stop)
    )


# An edit that changes the line count re-parses the rest of the file. In one piece that holds
# the GIL for ~50 ms at 10,000 lines while the language server's event loop waits to answer
# hovers; in slices of 500 lines each holds it ~5 ms, for ~13 % more parsing time.
REPARSE_SLICE_LINES = 500


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return parse_in_chunks(text, "<unknown>", REPARSE_SLICE_LINES)


def reparse(previous: ParsedText, text: str) -> ast.Module | None:
    """The tree of ``text`` (no BOM), re-parsing only the region ``previous`` → ``text``
    changed; None when the splice is not certain to equal a full parse."""
    old = previous.text
    if old == text:
        return previous.tree
    stmts = previous.statement_lines
    if not stmts:
        return None
    start = common_prefix(old, text)
    same_tail = common_suffix(old, text, min(len(old), len(text)) - start)
    old_end = len(old) - same_tail  # the edit replaced old[start:old_end]
    first_line = previous.line_of(start)
    last_line = previous.line_of(max(old_end - 1, start))
    # The statement the edit falls in, with the lines between it and its neighbours.
    i = bisect.bisect_right(stmts, (first_line, len(old) + 1)) - 1
    if i >= 0 and stmts[i][1] >= first_line:
        pass  # the edit starts inside statement i
    else:
        i += 1  # the edit starts between statements: the next one's region holds it
    if i >= len(stmts):
        i = len(stmts) - 1
    region_first = stmts[i - 1][1] + 1 if i > 0 else 0
    region_last = stmts[i + 1][0] - 1 if i + 1 < len(stmts) else len(previous.line_starts) - 1
    shared_before = i > 0 and stmts[i - 1][1] >= stmts[i][0]
    shared_after = i + 1 < len(stmts) and stmts[i + 1][0] <= stmts[i][1]
    if shared_before or shared_after:  # ``a = 1; b = 2``: no line boundary between them
        return None
    if not region_first <= first_line <= last_line <= region_last:
        return None
    starts = previous.line_starts
    seg_start = starts[region_first]
    seg_end_old = starts[region_last + 1] if region_last + 1 < len(starts) else len(old)
    if seg_start > start or seg_end_old < old_end:
        return None
    if seg_start > 0 and old[seg_start - 1] == "\r" and text[seg_start : seg_start + 1] == "\n":
        return None  # the edit joined "\r" + "\n" into one line end across the boundary
    if region_first > 0 and old[starts[region_first - 1] : seg_start].rstrip("\r\n").endswith("\\"):
        return None  # a backslash continues the line before the region into it
    seg_end = seg_end_old + len(text) - len(old)
    segment = text[seg_start:seg_end]
    if seg_end < len(text) and (
        not segment.endswith(("\n", "\r")) or (segment[-1] == "\r" and text[seg_end] == "\n")
    ):
        return None  # the region no longer ends a line, or its "\r" joins the next "\n"
    # When the edit keeps the region's line count, the statements after it keep their
    # lines and are reused; otherwise they are parsed again, in their new lines.
    keep_after = seg_end < len(text) and len(_LINE_START.findall(segment)) == (
        region_last + 1 - region_first
    )
    body = segment if keep_after else text[seg_start:]
    try:
        parsed = _parse("\n" * region_first + body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the full parse says what is wrong, and where
    tree = previous.tree
    after = tree.body[i + 1 :] if keep_after else []
    return ast.Module(body=tree.body[:i] + parsed.body + after, type_ignores=[])


__all__ = ["ParsedText", "common_prefix", "common_suffix", "line_breaks", "reparse"]
