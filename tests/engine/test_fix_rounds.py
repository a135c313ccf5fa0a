"""``fix_source``'s fallback when the combined edit of a round fails: one fix at a time, and
the outcome names only the fixes it really applied."""

from __future__ import annotations

import ast

from xla_lens.engine.fixing import _apply_one_by_one
from xla_lens.rules.base import Finding, Fix, Pos, RemoveStatement, Replace, Severity, Span


def _span(node: ast.AST) -> Span:
    return Span(
        Pos(node.lineno - 1, node.col_offset),
        Pos(node.end_lineno - 1, node.end_col_offset),  # type: ignore[attr-defined]
    )


def test_the_fallback_reports_the_one_fix_it_applied():
    source = "import torch\nvalue = grid[1, 2]\ntorch.cuda.synchronize()\n"
    tree = ast.parse(source)
    index = next(n for n in ast.walk(tree) if isinstance(n, ast.Tuple))
    sync = tree.body[2]
    # libcst has no node for ``grid[1, 2]``'s index tuple: this fix cannot apply.
    refused = Finding(
        "XLA998", "t", _span(index), Severity.WARNING, fix=Fix("x", (Replace(_span(index), "0"),))
    )
    removal = Finding(
        "XLA999", "t", _span(sync), Severity.WARNING, fix=Fix("y", (RemoveStatement(_span(sync)),))
    )
    text, applied = _apply_one_by_one(source, [refused, removal])
    assert text == "import torch\nvalue = grid[1, 2]\n"
    assert applied == [removal]
    assert _apply_one_by_one(source, [refused]) == (source, [])
