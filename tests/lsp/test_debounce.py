"""The debounce policy: an edit that finds the server idle is analysed at once, a burst of edits costs one
analysis of its last text, and an older analysis still running is never run side by side
with the newer one. Measured against a long debounce window (2 s) so the difference between
"at once" and "after the window" is plain even on a loaded machine."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import initialize, open_text, wait_published
from tests.lsp.test_large_documents import server_stats

WINDOW_MS = 2000
TEXT = "import torch\n\nx = torch.zeros(3).cuda()\n"


def change(client: LanguageClient, uri: str, version: int, line: int, text: str) -> None:
    at = types.Position(line=line, character=0)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(at, at), text=text)
            ],
        )
    )


async def test_an_edit_after_idle_is_analysed_without_waiting_for_the_window(
    client: LanguageClient, tmp_path: Path
):
    await initialize(client, settings={"target": "modern"}, debounce_ms=WINDOW_MS)
    uri = open_text(client, tmp_path / "idle.py", TEXT)
    await wait_published(client, uri, version=1)
    await asyncio.sleep(0.2)  # idle: the analysis of version 1 is published, nothing pending
    start = time.monotonic()
    change(client, uri, 2, 3, "y = torch.ones(2).cuda()\n")
    published = await wait_published(client, uri, version=2)
    assert time.monotonic() - start < WINDOW_MS / 1000 / 2
    assert len([d for d in published.diagnostics if d.code == "XLA101"]) == 2


async def test_a_burst_of_edits_is_analysed_once_for_its_last_text(
    client: LanguageClient, tmp_path: Path
):
    await initialize(client, settings={"target": "modern"}, debounce_ms=WINDOW_MS)
    uri = open_text(client, tmp_path / "burst.py", TEXT)
    await wait_published(client, uri, version=1)
    before = (await server_stats(client)).analyses
    for i in range(5):  # typed faster than the window
        change(client, uri, 2 + i, 3 + i, f"y{i} = torch.ones({i}).cuda()\n")
    published = await wait_published(client, uri, version=6)
    assert len([d for d in published.diagnostics if d.code == "XLA101"]) == 6
    # The first keystroke came after idle and started at once; the other four coalesced.
    assert (await server_stats(client)).analyses - before <= 2
    versions = [p.version for p in client.published if p.uri == uri]  # type: ignore[attr-defined]
    assert versions[-1] == 6 and not {3, 4, 5} & set(versions)
