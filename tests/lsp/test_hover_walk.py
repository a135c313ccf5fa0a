"""A hover walks only the nodes on its line: it must find what walking the whole
top-level statement finds, at every position of the samples."""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import pytest
from xla_lens.engine.analysis import parse
from xla_lens.lsp import hover
from xla_lens.rules.base import Pos

from tests.engine.test_incremental import BASE

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
TEXTS = {"base": BASE, **{p.name: p.read_text() for p in sorted(SAMPLES.glob("*.py"))}}


def _whole_statement_walk(tree: ast.Module, line: int) -> Iterator[ast.AST]:
    roots = [
        s
        for s in tree.body
        if min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", ())]) - 1
        <= line
        <= (s.end_lineno or s.lineno) - 1
    ]
    todo = deque(roots)
    while todo:
        node = todo.popleft()
        todo.extend(ast.iter_child_nodes(node))
        yield node


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_the_line_walk_finds_what_the_statement_walk_finds(name: str, monkeypatch) -> None:
    model = parse(TEXTS[name])
    positions = [
        Pos(line, col) for line, text in enumerate(model.lines) for col in range(0, len(text), 2)
    ]
    pruned = [hover.api_hover(model, pos) for pos in positions]
    monkeypatch.setattr(hover, "_walk_statements_at", _whole_statement_walk)
    assert pruned == [hover.api_hover(model, pos) for pos in positions]
