"""``Entry.commentable(line)`` tokenizes one top-level statement, not the file: it must
answer as the whole-file ``commentable_lines`` does, line for line."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import Settings, analyze
from xla_lens.lsp.state import Entry

from tests.engine.test_incremental import BASE

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

TEXTS = {
    "base": BASE,
    "crlf": BASE.replace("\n", "\r\n"),
    "lone_cr": BASE.replace("\n", "\r"),
    "no_final_newline": BASE.rstrip("\n"),
    "bom": "\ufeff" + BASE,
    "strings": 'x = 1; y = """a\nb"""\nz = f"""{x}\n{y}"""  # c \\\n# tail \\\n',
    "continued": "x = (1 +\n     2) \\\n    + 3\n\n@d\n\ndef f(): pass\n",
    **{p.name: p.read_text() for p in sorted(SAMPLES.glob("*.py"))},
}


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_commentable_matches_the_whole_file_answer(name: str) -> None:
    text = TEXTS[name]
    settings = Settings(target="modern")
    entry = Entry("file:///t.py", 1, text, analyze(text, "t.py", settings), settings, "modern")
    assert entry.ok
    expected = entry.commentable_lines
    assert [entry.commentable(i) for i in range(len(entry.lines) + 2)] == [
        i in expected for i in range(len(entry.lines) + 2)
    ]
