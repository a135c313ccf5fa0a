"""The pure parts of the server on real engine objects: diagnostics, suppressions, BOM."""

from __future__ import annotations

from dataclasses import replace

from lsprotocol import types
from xla_lens.engine import Settings, analyze
from xla_lens.lsp.diagnostics import to_diagnostic
from xla_lens.lsp.fixes import ignore_on_line
from xla_lens.lsp.state import Entry

from tests.helpers import src


def _entry(text: str) -> Entry:
    analysis = analyze(text, "t.py", Settings(target="modern"), "modern")
    return Entry("file:///t.py", 1, text, analysis, Settings(target="modern"), "modern")


def test_deprecated_findings_get_the_deprecated_tag_and_manual_steps_show():
    entry = _entry('import torch\nd = torch.device("cuda")\n')
    finding = replace(entry.analysis.findings[0], deprecated=True, fix=None, manual="do X")
    diag = to_diagnostic(entry, finding, 0)
    assert diag.tags == [types.DiagnosticTag.Deprecated]
    assert diag.message.endswith("By hand: do X")
    plain = to_diagnostic(entry, entry.analysis.findings[0], 0)
    assert plain.tags is None


def test_bom_shifts_only_line_zero():
    text = '\ufeffimport torch; d = torch.device("cuda")\nx = torch.device("cuda")\n'
    entry = _entry(text)
    ranges = {
        f.span.start.line: to_diagnostic(entry, f, i).range
        for i, f in enumerate(entry.analysis.findings)
    }
    # The engine counts without the BOM; the editor's line 0 still starts with it.
    assert entry.analysis.findings[0].span.start.col == 18
    assert ranges[0].start.character == 19
    assert ranges[1].start.character == 4
    assert entry.pos(types.Position(line=0, character=19)).col == 18


def test_ignore_extends_an_existing_suppression_and_skips_string_lines():
    text = src('''
        import torch
        a = torch.device("cuda")  # xla-lens: ignore[XLA999]
        b = torch.device("cuda"), """
        text"""
        ''')
    entry = _entry(text)
    lines = {
        f.span.start.line: i for i, f in enumerate(entry.analysis.findings) if f.code == "XLA101"
    }
    new = ignore_on_line(entry, lines[1])
    assert new.splitlines()[1] == 'a = torch.device("cuda")  # xla-lens: ignore[XLA999, XLA101]'
    # Line 2 ends inside a triple-quoted string: no comment can go there.
    assert ignore_on_line(entry, lines[2]) is None


def test_commentable_lines_count_a_lone_carriage_return_as_a_line_end():
    # LSP (and Python) end a line at a lone \r: the string's lines must be the same lines here.
    text = 'import torch\rx = """a\rb"""\rdevice = torch.device("cuda")\r'
    entry = _entry(text)
    assert entry.commentable_lines == frozenset({0, 2, 3})
    (index,) = [i for i, f in enumerate(entry.analysis.findings) if f.code == "XLA101"]
    assert entry.analysis.findings[index].span.start.line == 3
    new = ignore_on_line(entry, index)
    assert new is not None
    assert new.split("\r")[3] == 'device = torch.device("cuda")  # xla-lens: ignore[XLA101]'
