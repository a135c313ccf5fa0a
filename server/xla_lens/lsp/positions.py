"""Column conversion between the engine (code points) and the client (negotiated units).

The engine's ``Span`` columns count Unicode code points on 0-based lines. LSP positions
count UTF-16 code units unless the client negotiated UTF-8 or UTF-32 in ``initialize``.
Lines are split the way LSP (and Python's tokenizer) split them: on ``\\n``, ``\\r\\n`` and
``\\r`` only. ``str.splitlines`` would also break on form feeds and U+2028, which would
shift every line below them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from lsprotocol import types

from ..rules.base import Pos, Span

UTF8 = types.PositionEncodingKind.Utf8
UTF16 = types.PositionEncodingKind.Utf16
UTF32 = types.PositionEncodingKind.Utf32

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Lines with their terminators; a trailing terminator adds no empty last line."""
    return _LINE.findall(text)


def offset_at(text: str, position: types.Position, encoding: str = UTF16) -> int:
    """Code-point offset in ``text`` of a client position, with LSP's clamping: a column past
    the line's end means the end of its content, a line past the last means the end of text."""
    start = 0
    if position.line > 0:
        breaks = itertools.islice(_BREAK.finditer(text), position.line - 1, position.line)
        found = next(breaks, None)
        if found is None:
            return len(text)
        start = found.end()
    following = _BREAK.search(text, start)
    content = text[start : following.start() if following else len(text)]
    return start + from_client_col(content, position.character, encoding)


def _content(line: str) -> str:
    return line.rstrip("\r\n")


def _units(char: str, encoding: str) -> int:
    cp = ord(char)
    if encoding == UTF8:
        return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    if encoding == UTF32:
        return 1
    return 2 if cp > 0xFFFF else 1


def units_of(text: str, encoding: str = UTF16) -> int:
    """Length of ``text`` in the client's code units."""
    if text.isascii() or encoding == UTF32:
        return len(text)
    return sum(_units(c, encoding) for c in text)


def to_client_col(line: str, col: int, encoding: str = UTF16) -> int:
    """Code-point column on ``line`` → client units (clamped to the line's content)."""
    text = _content(line)
    return units_of(text[: max(col, 0)], encoding)


def from_client_col(line: str, units: int, encoding: str = UTF16) -> int:
    """Client units on ``line`` → code-point column. A position inside a surrogate pair
    (or a UTF-8 sequence) rounds down to the character's start."""
    text = _content(line)
    if text.isascii() or encoding == UTF32:
        return min(max(units, 0), len(text))
    seen = 0
    for i, char in enumerate(text):
        width = _units(char, encoding)
        if seen + width > units:
            return i
        seen += width
    return len(text)


def to_position(lines: Sequence[str], pos: Pos, encoding: str = UTF16) -> types.Position:
    if pos.line >= len(lines):
        # A span that ends after the last line (e.g. EOF after a trailing newline).
        return types.Position(line=len(lines), character=0)
    return types.Position(
        line=pos.line, character=to_client_col(lines[pos.line], pos.col, encoding)
    )


def to_range(lines: Sequence[str], span: Span, encoding: str = UTF16) -> types.Range:
    return types.Range(
        start=to_position(lines, span.start, encoding), end=to_position(lines, span.end, encoding)
    )


def from_position(lines: Sequence[str], position: types.Position, encoding: str = UTF16) -> Pos:
    if position.line >= len(lines):
        return Pos(len(lines), 0)
    return Pos(position.line, from_client_col(lines[position.line], position.character, encoding))


def from_range(lines: Sequence[str], rng: types.Range, encoding: str = UTF16) -> Span:
    return Span(from_position(lines, rng.start, encoding), from_position(lines, rng.end, encoding))


def end_of_document(lines: Sequence[str], encoding: str = UTF16) -> types.Position:
    if not lines:
        return types.Position(line=0, character=0)
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return types.Position(line=len(lines), character=0)
    return types.Position(line=len(lines) - 1, character=units_of(last, encoding))
