"""The server's document copy against an independent model of LSP's line semantics: random
texts full of characters that are line breaks for ``str.splitlines`` but not for LSP, random
incremental edits (UTF-16 columns, clamping past line ends and past the last line), and the
edits that join or split a ``\\r\\n``."""

from __future__ import annotations

import random
import re

import pytest
from lsprotocol import types
from xla_lens.lsp.textdocument import LspTextDocument

ALPHABET = ["a", " ", "\n", "\r", "\r\n", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85"]
ALPHABET += ["\u2028", "\u2029", "😀", "é", "\t"]
BREAK = re.compile(r"\r\n|\r|\n")


def reference_offset(text: str, line: int, character: int) -> int:
    starts = [0] + [m.end() for m in BREAK.finditer(text)]
    if line >= len(starts):
        return len(text)
    start = starts[line]
    found = BREAK.search(text, start)
    end = found.start() if found else len(text)
    units, i = 0, start
    while i < end:
        width = 2 if ord(text[i]) > 0xFFFF else 1
        if units + width > character:
            break
        units, i = units + width, i + 1
    return i


def document(text: str) -> LspTextDocument:
    return LspTextDocument(
        "file:///x.py", source=text, version=0, sync_kind=types.TextDocumentSyncKind.Incremental
    )


def change(doc: LspTextDocument, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
    rng = types.Range(types.Position(*start), types.Position(*end))
    doc.apply_change(types.TextDocumentContentChangePartial(range=rng, text=text))


@pytest.mark.parametrize("seed", range(4))
def test_random_edits_match_an_independent_lsp_model(seed: int) -> None:
    rnd = random.Random(seed)
    for _ in range(300):
        model = "".join(rnd.choice(ALPHABET) for _ in range(rnd.randrange(30)))
        doc = document(model)
        for _ in range(6):
            lines = len(BREAK.findall(model)) + 2
            a = (rnd.randrange(lines), rnd.randrange(8))
            b = (rnd.randrange(lines), rnd.randrange(8))
            oa, ob = reference_offset(model, *a), reference_offset(model, *b)
            if ob < oa:
                a, b, oa, ob = b, a, ob, oa
            new = "".join(rnd.choice(ALPHABET) for _ in range(rnd.randrange(4)))
            model = model[:oa] + new + model[ob:]
            change(doc, a, b, new)
            assert doc.source == model


def test_a_carriage_return_inserted_before_a_line_feed_joins_them() -> None:
    doc = document("a\nb\nc")
    change(doc, (0, 1), (0, 1), "\r")  # now "a\r\nb\nc": still three lines
    change(doc, (1, 0), (1, 1), "B")
    assert doc.source == "a\r\nB\nc"


def test_a_line_feed_inserted_after_a_lone_carriage_return_joins_them() -> None:
    doc = document("a\rb\rc")
    change(doc, (1, 0), (1, 0), "\n")  # "a\r\nb\rc"
    change(doc, (2, 0), (2, 1), "C")
    assert doc.source == "a\r\nb\rC"


def test_a_position_inside_a_surrogate_pair_never_splits_it() -> None:
    doc = document("x = '😀'\n")
    change(doc, (0, 6), (0, 6), "Z")  # column 6 is the emoji's second UTF-16 unit
    assert "😀" in doc.source and doc.source.count("Z") == 1
    doc.source.encode("utf-8")  # no lone surrogate
