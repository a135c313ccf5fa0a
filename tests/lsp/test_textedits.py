"""Minimal text edits and UTF-16 positions, checked with an independent applier."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from xla_lens.lsp.positions import (
    UTF8,
    UTF32,
    from_client_col,
    split_lines,
    to_client_col,
)
from xla_lens.lsp.textedits import apply_edits, minimal_edits

from tests.lsp.lsp_helpers import apply_text_edits

pieces = st.sampled_from(["a", "b", " ", "\n", "\r\n", "\r", "é", "😀", "#", "\t"])
texts = st.lists(pieces, max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts, texts)
def test_edits_turn_old_into_new_in_utf16(old: str, new: str):
    edits = minimal_edits(old, new)
    assert apply_text_edits(old, edits) == new
    # Edits are in document order and do not overlap (the LSP requirement).
    for a, b in zip(edits, edits[1:], strict=False):
        assert (a.range.end.line, a.range.end.character) <= (
            b.range.start.line,
            b.range.start.character,
        )


@settings(max_examples=200, deadline=None)
@given(texts, texts, st.sampled_from([UTF8, UTF32]))
def test_edits_in_other_negotiated_encodings(old: str, new: str, encoding: str):
    assert apply_edits(old, minimal_edits(old, new, encoding), encoding) == new


def test_one_token_change_is_one_small_edit():
    old = 'x = "😀"; device = torch.device("cuda")\ny = 1\n'
    new = 'x = "😀"; device = torch_xla.device()\ny = 1\n'
    (edit,) = minimal_edits(old, new)
    prefix = 'x = "😀"; device = torch'
    assert edit.range.start == types.Position(line=0, character=len(prefix) + 1)  # 😀 is 2 units
    assert edit.new_text == "_xla.device("  # the shared ")" stays


def test_lines_split_like_python_not_like_str_splitlines():
    text = "a\x0cb\nc\u2028d\r\ne\rf"
    assert split_lines(text) == ["a\x0cb\n", "c\u2028d\r\n", "e\r", "f"]


def test_columns_round_trip_and_surrogate_halves_round_down():
    line = "é😀x\n"
    assert [to_client_col(line, c) for c in range(4)] == [0, 1, 3, 4]
    assert from_client_col(line, 2) == 1  # inside the surrogate pair
    assert from_client_col(line, 99) == 3
    assert to_client_col(line, 3, UTF8) == 7
