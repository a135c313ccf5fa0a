"""Turn an old and a new document text into the minimal list of LSP ``TextEdit``s.

The engine rewrites whole files (libcst round-trips them); sending the whole file back
would move the user's cursor, fold state and undo granularity. A line diff (difflib)
finds the changed blocks, then each block is trimmed to the characters that differ, so a
one-token fix is a one-token edit.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Sequence

from lsprotocol import types

from .positions import UTF16, split_lines, units_of


def _line_starts(lines: Sequence[str]) -> list[int]:
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


def _position(
    text: str, lines: Sequence[str], starts: Sequence[int], offset: int, encoding: str
) -> types.Position:
    """The client position of code-point ``offset`` in ``text``."""
    line = bisect.bisect_right(starts, offset, hi=len(lines)) - 1
    if line < 0:
        return types.Position(line=0, character=0)
    if offset >= starts[line] + len(lines[line]) and lines[line].endswith(("\n", "\r")):
        # Only reached at the very end of a text whose last line has a terminator.
        return types.Position(line=line + 1, character=0)
    return types.Position(line=line, character=units_of(text[starts[line] : offset], encoding))


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _safe_cut(text: str, offset: int) -> int:
    """Never place an edit boundary between ``\\r`` and ``\\n``: LSP has no position there."""
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        return offset - 1
    return offset


def minimal_edits(old: str, new: str, encoding: str = UTF16) -> list[types.TextEdit]:
    """Non-overlapping edits, in document order, that turn ``old`` into ``new``.

    The edits all refer to ``old`` (as the LSP ``WorkspaceEdit`` requires).
    """
    if old == new:
        return []
    old_lines = split_lines(old)
    new_lines = split_lines(new)
    old_starts = _line_starts(old_lines)
    new_starts = _line_starts(new_lines)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    edits: list[types.TextEdit] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        a_start, a_end = old_starts[i1], old_starts[i2]
        b_start, b_end = new_starts[j1], new_starts[j2]
        a, b = old[a_start:a_end], new[b_start:b_end]
        prefix = _common_prefix(a, b)
        rest = min(len(a), len(b)) - prefix
        suffix = _common_prefix(a[::-1], b[::-1])
        suffix = min(suffix, rest)
        start = _safe_cut(old, a_start + prefix)
        end = a_end - suffix
        if 0 < end < len(old) and old[end - 1] == "\r" and old[end] == "\n":
            end += 1
        # Keep the replacement aligned with the (possibly widened) old range.
        replacement = new[b_start + (start - a_start) : b_end - (a_end - end)]
        edits.append(
            types.TextEdit(
                range=types.Range(
                    start=_position(old, old_lines, old_starts, start, encoding),
                    end=_position(old, old_lines, old_starts, end, encoding),
                ),
                new_text=replacement,
            )
        )
    return edits


def apply_edits(text: str, edits: Sequence[types.TextEdit], encoding: str = UTF16) -> str:
    """Apply ``edits`` (all relative to ``text``) — used to check results server-side."""
    lines = split_lines(text)
    starts = _line_starts(lines)

    def offset(pos: types.Position) -> int:
        if pos.line >= len(lines):
            return len(text)
        line = lines[pos.line]
        units = 0
        for i, char in enumerate(line.rstrip("\r\n")):
            if units >= pos.character:
                return starts[pos.line] + i
            units += units_of(char, encoding)
        return starts[pos.line] + len(line.rstrip("\r\n"))

    out = text
    for edit in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        out = out[: offset(edit.range.start)] + edit.new_text + out[offset(edit.range.end) :]
    return out
