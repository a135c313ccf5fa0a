"""Hover while an analysis is pending: answered at once from the last analysis when the
hovered line (and the range of the answer) is unchanged since it, with the range moved to
where that line is now; on an edited line, only the findings that enclose the whole edit."""

from __future__ import annotations

import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient
from xla_lens.lsp.state import line_map

from tests.lsp.lsp_helpers import initialize, open_text, wait_published
from tests.lsp.test_large_documents import big_source

INSERTED = "y = torch.zeros(1).cuda()\n"


def _hover_params(uri: str, line: int, character: int) -> types.HoverParams:
    return types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=character),
    )


async def test_hover_during_a_slow_analysis_answers_at_once_on_an_unchanged_line(
    client: LanguageClient, tmp_path: Path
) -> None:
    await initialize(client, settings={"target": "modern"})
    text = big_source(300_000)  # long enough that its analysis is still running below
    uri = open_text(client, tmp_path / "big.py", text)
    await wait_published(client, uri, version=1)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 0), types.Position(0, 0)), text=INSERTED
                )
            ],
        )
    )
    new_lines = (INSERTED + text).split("\n")
    line = next(i for i, s in enumerate(new_lines) if ".cuda()" in s and i > 1000)
    col = new_lines[line].index(".cuda()") + 2
    started = time.monotonic()
    stale = await client.text_document_hover_async(_hover_params(uri, line, col))
    answered_in = time.monotonic() - started
    assert not any(p.version == 2 for p in client.published), "the analysis was not pending"
    assert answered_in < 1.0
    assert stale is not None and "XLA101" in stale.contents.value
    # Moved down with the inserted line: the range is on the hovered (new) line.
    assert stale.range is not None and stale.range.start.line == line
    covered = new_lines[line][stale.range.start.character : stale.range.end.character]
    assert covered.endswith(".cuda")

    # The edited line has no counterpart in the last analysis, and no finding of it encloses
    # the edit: the answer is at once, and empty (never about the old line 0, `import torch`).
    started = time.monotonic()
    edited = await client.text_document_hover_async(_hover_params(uri, 0, INSERTED.index("cuda")))
    assert time.monotonic() - started < 1.0
    assert not any(p.version == 2 for p in client.published), "the analysis was not pending"
    assert edited is None

    # Once it is done, the same hovers give the new analysis's answers.
    await wait_published(client, uri, version=2)
    fresh = await client.text_document_hover_async(_hover_params(uri, line, col))
    assert fresh == stale
    first = await client.text_document_hover_async(_hover_params(uri, 0, INSERTED.index("cuda")))
    assert first is not None and "XLA101" in first.contents.value
    assert first.range is not None and first.range.start.line == 0


async def test_hover_on_an_edited_line_inside_a_findings_range_keeps_that_finding(
    client: LanguageClient, tmp_path: Path
) -> None:
    """A finding whose range encloses the whole edit (a call written over several lines)
    still covers the edited line while the new analysis is pending."""
    await initialize(client, settings={"target": "modern"})
    tail = 'device = torch.device(\n    "cuda",\n    0,\n)\n'
    text = big_source(300_000) + tail
    uri = open_text(client, tmp_path / "multi.py", text)
    published = await wait_published(client, uri, version=1)
    lines = text.split("\n")
    call_line = lines.index("device = torch.device(")
    assert any(
        d.code == "XLA101" and (d.range.start.line, d.range.end.line) == (call_line, call_line + 3)
        for d in published.diagnostics
    )
    edit_line = call_line + 2  # the `0,` line
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(edit_line, 4), types.Position(edit_line, 5)),
                    text="1",
                )
            ],
        )
    )
    started = time.monotonic()
    hover = await client.text_document_hover_async(_hover_params(uri, edit_line, 4))
    assert time.monotonic() - started < 1.0
    assert not any(p.version == 2 for p in client.published), "the analysis was not pending"
    assert hover is not None and "XLA101" in hover.contents.value
    assert hover.range is not None
    assert (hover.range.start.line, hover.range.end.line) == (call_line, call_line + 3)


def test_line_map_keeps_only_the_unchanged_prefix_and_suffix() -> None:
    old = ["a\n", "b\n", "c\n", "d\n"]
    new = ["a\n", "x\n", "y\n", "c\n", "d\n"]
    m = line_map(old, new)
    assert [m.to_old(i) for i in range(5)] == [0, None, None, 2, 3]
    moved = m.range_to_new(types.Range(types.Position(2, 1), types.Position(3, 0)))
    assert moved == types.Range(types.Position(3, 1), types.Position(4, 0))
    # A range reaching into the edited lines has no counterpart.
    assert m.range_to_new(types.Range(types.Position(0, 0), types.Position(2, 0))) is None
    # Repeated lines: prefix and suffix never overlap.
    same = line_map(["a\n", "a\n"], ["a\n", "a\n", "a\n"])
    assert same.prefix + same.suffix <= 2
    assert [same.to_old(i) for i in range(3)] == [0, 1, None]
