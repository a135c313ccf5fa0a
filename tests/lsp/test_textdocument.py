"""Incremental changes on the server's document copy, checked against hand-written results:
LSP's line breaks only, UTF-16 columns, and LSP's clamping of out-of-range positions."""

from __future__ import annotations

import pytest
from lsprotocol import types
from xla_lens.lsp.textdocument import LspTextDocument


def changed(text: str, start: tuple[int, int], end: tuple[int, int], new: str) -> str:
    doc = LspTextDocument("file:///t.py", text)
    doc.apply_change(
        types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(*start), types.Position(*end)), text=new
        )
    )
    return doc.source


@pytest.mark.parametrize(
    ("text", "start", "end", "new", "expected"),
    [
        # Form feed and U+2028 do not end a line: line 1 is "y = 1".
        ("a\x0cb\ny = 1\n", (1, 4), (1, 5), "2", "a\x0cb\ny = 2\n"),
        ("a\u2028b\ny = 1\n", (1, 0), (1, 1), "z", "a\u2028b\nz = 1\n"),
        # \r\n and a lone \r do.
        ("a\r\nb\rc\n", (2, 0), (2, 1), "C", "a\r\nb\rC\n"),
        ("a\r\nb\rc\n", (1, 0), (2, 0), "", "a\r\nc\n"),
        # UTF-16 columns: the emoji counts 2.
        ("s = '😀x'\n", (0, 7), (0, 8), "y", "s = '😀y'\n"),
        # A column past the line's end means its end (never the next line).
        ("ab\ncd\n", (0, 99), (0, 99), "!", "ab!\ncd\n"),
        # A line past the last means the end of the text.
        ("ab\n", (7, 3), (9, 0), "tail", "ab\ntail"),
        ("ab\n", (1, 0), (1, 0), "cd\n", "ab\ncd\n"),
        # A reversed range names the same text.
        ("abcdef", (0, 4), (0, 1), "-", "a-ef"),
        # Multi-line replacement across a non-LSP break.
        ("x\x1cy\nz\nw\n", (0, 2), (1, 1), "Y\nZ", "x\x1cY\nZ\nw\n"),
    ],
)
def test_incremental_change(text, start, end, new, expected):
    assert changed(text, start, end, new) == expected


def test_lines_and_offsets_follow_lsp():
    doc = LspTextDocument("file:///t.py", "a\x0cb\u2028c\r\nd\re\n😀f")
    assert doc.lines == ("a\x0cb\u2028c\r\n", "d\r", "e\n", "😀f")
    assert doc.offset_at_position(types.Position(3, 2)) == len("a\x0cb\u2028c\r\nd\re\n😀")


def test_a_full_change_replaces_the_text():
    doc = LspTextDocument("file:///t.py", "old")
    doc.apply_change(types.TextDocumentContentChangeWholeDocument(text="new\x0ctext"))
    assert doc.source == "new\x0ctext"
