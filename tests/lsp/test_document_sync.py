"""The server's copy of a document follows the editor's through incremental edits when a
line holds a character that ``str.splitlines`` (but not LSP) treats as a line break.

Each case goes over stdio with a real client: the diagnostics published for the edited
version sit on the lines the engine finds in the true text, and the Convert edit, applied
client-side with LSP's line rules, gives exactly what ``fix_source`` makes of the true text.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient
from xla_lens.engine import analyze, fix_source
from xla_lens.lsp.fixes import is_conversion

from tests.lsp.lsp_helpers import (
    apply_text_edits,
    edits_of,
    initialize,
    open_text,
    utf16_col,
    wait_published,
)

# Form feed, VT, FS, GS, RS, NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR.
NOT_LSP_LINE_BREAKS = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]

BEFORE = "import torch\n\n# 😀 marker{ch} tail\nx = torch.zeros(3).cuda()\ny = 1\n"
AFTER = (
    "import torch\n\n# 😀 marker{ch} TAIL\nx = torch.zeros(3).cuda()\ny = torch.ones(2).cuda()\n"
)


def _range(line: int, start: int, end: int) -> types.Range:
    return types.Range(types.Position(line, start), types.Position(line, end))


@pytest.mark.parametrize("ch", NOT_LSP_LINE_BREAKS, ids=lambda c: f"U+{ord(c):04X}")
async def test_incremental_edits_after_a_non_lsp_line_break_land_where_the_editor_made_them(
    client: LanguageClient, tmp_path: Path, ch: str
):
    applied: list[types.ApplyWorkspaceEditParams] = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        applied.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    await initialize(client, settings={"target": "modern"})
    path = tmp_path / "sync.py"
    before, after = BEFORE.format(ch=ch), AFTER.format(ch=ch)
    uri = open_text(client, path, before)
    await wait_published(client, uri, version=1)

    # In LSP lines: 2 is the comment, 4 is "y = 1". Two changes in one notification, the
    # later one first so each range refers to the text as it is when applied.
    comment = before.split("\n")[2]
    tail = comment.index("tail")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=_range(4, 4, 5), text="torch.ones(2).cuda()"
                ),
                types.TextDocumentContentChangePartial(
                    range=_range(2, utf16_col(comment, tail), utf16_col(comment, tail + 4)),
                    text="TAIL",
                ),
            ],
        )
    )
    published = await wait_published(client, uri, version=2)

    expected = analyze(after, str(path), target="modern").findings
    assert sorted((d.range.start.line, d.code) for d in published.diagnostics) == sorted(
        (f.span.start.line, f.code) for f in expected
    )
    assert {d.range.start.line for d in published.diagnostics} == {3, 4}

    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="xla-lens.convert", arguments=[uri])
    )
    assert result["applied"] is True
    edits, version = edits_of(applied[-1].edit, uri)
    assert version == 2
    converted = apply_text_edits(after, edits)
    assert converted == fix_source(after, str(path), target="modern", accept=is_conversion).source
    assert f"marker{ch} TAIL\n" in converted
    assert "y = torch.ones(2).to(torch_xla.device())\n" in converted


async def test_a_lone_carriage_return_is_a_line_break(client: LanguageClient, tmp_path: Path):
    """The converse: ``\\r`` alone does end a line for LSP, so line numbers count it."""
    await initialize(client, settings={"target": "modern"})
    path = tmp_path / "cr.py"
    uri = open_text(client, path, "import torch\r# note\rx = 1\r")
    await wait_published(client, uri, version=1)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=_range(2, 4, 5), text="torch.zeros(1).cuda()"
                )
            ],
        )
    )
    published = await wait_published(client, uri, version=2)
    assert [(d.range.start.line, d.code) for d in published.diagnostics] == [(2, "XLA101")]
