"""``text_line_map`` (what a hover during a pending analysis uses) maps only lines that are
equal in both texts, and as many as the line-by-line ``line_map`` for a typed edit."""

from __future__ import annotations

import random

import pytest
from xla_lens.lsp.positions import split_lines
from xla_lens.lsp.state import line_map, text_line_map

from tests.engine.test_incremental import BASE, SNIPPETS, _random_edit, _variants


@pytest.mark.parametrize("seed", range(8))
def test_mapped_lines_are_equal_lines(seed: int) -> None:
    rng = random.Random(seed)
    old = _variants()[seed % 4]
    for _ in range(200):
        new = _random_edit(rng, old)
        old_lines, new_lines = split_lines(old), split_lines(new)
        mapping = text_line_map(old, len(old_lines), new)
        assert mapping.new_count == len(new_lines)
        for line in range(len(new_lines)):
            was = mapping.to_old(line)
            if was is not None:
                assert new_lines[line] == old_lines[was], (old, new, line)
        old = new if rng.random() < 0.5 else old


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if "\r" not in s])
def test_a_typed_edit_maps_as_many_lines_as_the_line_by_line_map(snippet: str) -> None:
    lines = split_lines(BASE)
    row = len(lines) // 2
    body = lines[row].rstrip("\n")
    for new_line in (body + snippet + "\n", snippet + lines[row]):
        new = "".join(lines[:row] + [new_line] + lines[row + 1 :])
        by_text = text_line_map(BASE, len(lines), new)
        by_line = line_map(lines, split_lines(new))
        assert (by_text.prefix, by_text.new_count) == (by_line.prefix, by_line.new_count)
        assert by_text.suffix >= by_line.suffix - 1
