"""``ast.parse`` of a big file a slice of top-level statements at a time.

Parsing builds the whole C syntax tree beside the Python one, so a one-piece parse peaks at
about twice the tree's size (a 5 MB script: ~580 MB). Parsed in slices of top-level
statements, only one slice's C tree lives beside the Python tree being built. The result is
the tree ``ast.parse`` gives (same nodes, same positions: each slice is parsed after as many
blank lines as precede it), and any file that does not cut cleanly, or does not parse, is
handed to ``ast.parse`` whole, so its errors are the ones ``ast.parse`` reports.

A slice is cut only before a line that starts at column 0 with a name or a decorator (not
``else``/``elif``/``except``/``finally``, which continue a statement): when the text before
such a line parses on its own, nothing is left open at its end (no bracket, string or
backslash continuation), so that line starts a new top-level statement in the whole file
too, and the two parses agree statement for statement.
"""

from __future__ import annotations

import ast
import re

from .node_helpers import split_lines
from .tree_index import paused_gc

# Lines per slice; a file under twice this is parsed in one piece. ast.parse holds the GIL
# for a whole slice, and the language server answers hover and code actions on its event
# loop meanwhile: 1,000 lines are ~10 ms (5,000 were ~60 ms), and cost no more in all than
# 5,000 (a 5 MB file: 2.1 s either way; 500 lines: +13 %, 250: +45 %, blank-line prefixes).
CHUNK_LINES = 1000
_STATEMENT_START = re.compile(r"[A-Za-z_@]")
_CONTINUES_STATEMENT = re.compile(r"(else|elif|except|finally)\b")


def parse_in_chunks(text: str, filename: str = "<unknown>", chunk_lines: int = CHUNK_LINES):
    """``ast.parse(text, filename)``, with less memory at its peak on big files (and no
    garbage collection while it runs: building a tree makes no cycles, and each collection
    would walk every node built so far)."""
    with paused_gc():
        return _parse(text, filename, chunk_lines)


def _parse(text: str, filename: str, chunk_lines: int) -> ast.Module:
    if text.count("\n", 0, len(text)) < 2 * chunk_lines:
        return ast.parse(text, filename=filename)
    lines = split_lines(text)
    starts = [i for i, line in enumerate(lines) if _cut_before(line)]
    body: list[ast.stmt] = []
    begin, k = 0, 0  # first line of the slice; index into starts
    while begin < len(lines):
        end, k = _next_cut(starts, k, begin + chunk_lines, len(lines))
        while True:
            try:
                module = ast.parse("\n" * begin + "".join(lines[begin:end]), filename=filename)
                break
            except (SyntaxError, ValueError, RecursionError):
                if end >= len(lines):
                    return ast.parse(text, filename=filename)  # its own error, or its tree
                end, k = _next_cut(starts, k, end + chunk_lines, len(lines))
        body.extend(module.body)
        begin = end
    return ast.Module(body=body, type_ignores=[])


def _cut_before(line: str) -> bool:
    return _STATEMENT_START.match(line) is not None and not _CONTINUES_STATEMENT.match(line)


def _next_cut(starts: list[int], k: int, at_least: int, total: int) -> tuple[int, int]:
    """The first cut line at or after ``at_least`` (``total`` when none), and its index."""
    while k < len(starts) and starts[k] < at_least:
        k += 1
    return (starts[k], k) if k < len(starts) else (total, k)
