"""parse_in_chunks gives ast.parse's tree (and ast.parse's error) for every file, cut or not."""

from __future__ import annotations

import ast
import random
import warnings
from pathlib import Path

import pytest
from xla_lens.semantic import chunked_parse
from xla_lens.semantic.chunked_parse import parse_in_chunks

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "samples").glob("*.py")) + sorted(
    (ROOT / "server" / "xla_lens" / "semantic").glob("*.py")
)

# Cuts that must not split a statement: the text before each parses on its own, or not.
TRICKY = """\
import os
@decorator
def f(a,
b=1):
    return '''
def not_a_function():
    pass
'''
if os.environ:
    x = 1
else:
    x = 2
try:
    pass
except Exception:
    pass
finally:
    pass
value = [
1,
2]
total = 1 + \\
2
class C:
    pass
match value:
    case [1, 2]:
        pass
text = f\"\"\"{
value}\"\"\"
last = {**{}, 'k': None}
def g(*, a, b=2): pass
"""


def _dump(parse, text: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.dump(parse(text), include_attributes=True)
        except SyntaxError as e:
            return ("error", type(e).__name__, e.msg, e.lineno, e.offset, e.end_lineno, e.text)


@pytest.mark.parametrize("chunk_lines", [1, 2, 3, 7])
def test_tricky_cuts_give_ast_parse_tree(chunk_lines):
    expected = _dump(ast.parse, TRICKY)
    assert _dump(lambda t: parse_in_chunks(t, "<unknown>", chunk_lines), TRICKY) == expected


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_real_files_give_ast_parse_tree(path):
    text = path.read_text(encoding="utf-8")
    expected = _dump(ast.parse, text)
    for chunk_lines in (1, 5, 40):
        assert _dump(lambda t, n=chunk_lines: parse_in_chunks(t, "<unknown>", n), text) == expected


def test_broken_files_give_ast_parse_error():
    rng = random.Random(7)
    inserts = ["else:\n", "(\n", '"""\n', "def f(:\n", "  x = 1\n", "@d\n", "\\\n", "x = )\n"]
    errors = 0
    for path in SOURCES[:6]:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for trial in range(10):
            broken = list(lines)
            i = rng.randrange(len(broken))
            if trial % 2:
                broken.insert(i, rng.choice(inserts))
            else:
                del broken[i]
            text = "".join(broken)
            expected = _dump(ast.parse, text)
            errors += isinstance(expected, tuple)
            assert _dump(lambda t: parse_in_chunks(t, "<unknown>", 3), text) == expected
    assert errors > 10  # the check saw real syntax errors, not only trees


def test_small_files_are_parsed_whole(monkeypatch):
    calls = []
    real = ast.parse
    monkeypatch.setattr(
        chunked_parse.ast, "parse", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    parse_in_chunks("x = 1\n" * 100, "<unknown>", 100)
    assert calls == [1]
    calls.clear()
    parse_in_chunks("x = 1\n" * 100, "<unknown>", 10)
    assert len(calls) == 10


def test_crlf_and_cr_line_ends_keep_positions():
    for end in ("\r\n", "\r"):
        text = end.join(["a = 1", "def f():", "    return 2", "b = '''x", "y'''", "c = 3", ""])
        assert _dump(lambda t: parse_in_chunks(t, "<unknown>", 1), text) == _dump(ast.parse, text)
