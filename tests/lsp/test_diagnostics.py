"""Diagnostics end to end: codes, exact UTF-16 ranges, metadata, broken files, close."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pytest_lsp import LanguageClient
from xla_lens.engine import analyze
from xla_lens.rules.base import doc_url
from xla_lens.rules.registry import get_rule

from tests.lsp.lsp_helpers import DATA, initialize, open_text, send_edits, utf16_col, wait_published

SAMPLE = DATA / "train_cuda.py"


def _xla101(diags):
    return sorted(
        (d for d in diags if d.code == "XLA101"),
        key=lambda d: (d.range.start.line, d.range.start.character),
    )


async def test_diagnostics_have_exact_utf16_ranges_and_metadata(client: LanguageClient):
    await initialize(client, settings={"target": "modern"})
    uri = open_text(client, SAMPLE)
    published = await wait_published(client, uri, version=1)
    text = SAMPLE.read_text(encoding="utf-8")
    lines = text.splitlines()

    found = _xla101(published.diagnostics)
    assert [d.range.start.line for d in found] == [4, 5, 6]

    # Expected ranges computed here from the text, independently of the server.
    def expect(line: int, needle: str, occurrence_from: int = 0) -> types.Range:
        start = lines[line].index(needle, occurrence_from)
        end = start + len(needle)
        return types.Range(
            start=types.Position(line=line, character=utf16_col(lines[line], start)),
            end=types.Position(line=line, character=utf16_col(lines[line], end)),
        )

    assert found[0].range == expect(4, 'torch.device("cuda")')
    assert found[1].range == expect(5, "nn.Linear(4, 2).cuda()")
    # After two astral-plane emoji: code points and UTF-16 units differ by 2 here.
    line6 = lines[6]
    col = line6.index('"cuda"')
    assert found[2].range == expect(6, '"cuda"')
    assert found[2].range.start.character == col + 2

    for d in found:
        assert d.source == "xla-lens"
        assert d.severity == types.DiagnosticSeverity.Warning
        assert d.code_description.href == doc_url(get_rule("XLA101"))
        # The rule's page, generated from rules/xla101_cuda_device.md into docs/rules/.
        assert d.code_description.href.endswith("/docs/rules/XLA101.md")

    # Every code the engine reports for this text is published (other rules included).
    engine_codes = sorted(f.code for f in analyze(text, str(SAMPLE), target="modern").findings)
    assert sorted(d.code for d in published.diagnostics) == engine_codes


async def test_incremental_change_republishes_and_broken_text_keeps_last_diagnostics(
    client: LanguageClient,
):
    await initialize(client, settings={"target": "modern"})
    path = DATA / "broken.py"
    uri = open_text(client, path)
    first = await wait_published(client, uri, version=1)
    assert [d.code for d in _xla101(first.diagnostics)] == ["XLA101"]

    # Incremental edit: add a second CUDA device on a new line.
    n = len(client.published)
    send_edits(
        client,
        uri,
        2,
        [
            types.TextEdit(
                range=types.Range(
                    start=types.Position(line=3, character=0),
                    end=types.Position(line=3, character=0),
                ),
                new_text='x = torch.zeros(2, device="cuda")\n',
            )
        ],
    )
    second = await wait_published(client, uri, version=2, after=n)
    assert [d.range.start.line for d in _xla101(second.diagnostics)] == [2, 3]

    # Break the syntax: nothing new is published, the server stays alive.
    n = len(client.published)
    send_edits(
        client,
        uri,
        3,
        [
            types.TextEdit(
                range=types.Range(
                    start=types.Position(line=3, character=0),
                    end=types.Position(line=3, character=0),
                ),
                new_text="def broken(:\n",
            )
        ],
    )
    await asyncio.sleep(0.5)
    assert [p for p in client.published[n:] if p.uri == uri] == []
    assert [d.range.start.line for d in _xla101(client.diagnostics[uri])] == [2, 3]

    # The server still answers, and fixing the syntax publishes again.
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=2, character=12),
        )
    )
    assert hover is None  # no analysis for broken text
    n = len(client.published)
    send_edits(
        client,
        uri,
        4,
        [
            types.TextEdit(
                range=types.Range(
                    start=types.Position(line=3, character=0),
                    end=types.Position(line=4, character=0),
                ),
                new_text="",
            )
        ],
    )
    fourth = await wait_published(client, uri, version=4, after=n)
    assert [d.range.start.line for d in _xla101(fourth.diagnostics)] == [2, 3]
    assert not [m for m in client.log_messages if m.type == types.MessageType.Error]


async def test_closing_clears_and_several_documents_are_independent(client: LanguageClient):
    await initialize(client, settings={"target": "modern"})
    a = open_text(client, SAMPLE)
    b = open_text(client, DATA / "broken.py")
    pa = await wait_published(client, a, version=1)
    pb = await wait_published(client, b, version=1)
    assert len(_xla101(pa.diagnostics)) == 3
    assert len(_xla101(pb.diagnostics)) == 1

    n = len(client.published)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=a))
    )
    cleared = await wait_published(client, a, after=n)
    assert list(cleared.diagnostics) == []
    assert len(_xla101(client.diagnostics[b])) == 1
