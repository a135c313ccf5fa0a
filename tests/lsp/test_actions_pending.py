"""Code actions while an analysis is pending: answered at once from the last analysis (the
one whose diagnostics are on screen), and resolved on the text the editor has now, so an
edit never lands where an older text had the finding (a client without versioned edits
would apply it anyway)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.lsp.lsp_helpers import (
    TIMEOUT,
    apply_text_edits,
    edits_of,
    initialize,
    open_text,
    wait_published,
)
from tests.lsp.test_large_documents import big_source

# Code, not a comment: a comment-only edit has its diagnostics carried over at once
# (tests/lsp/test_carried_diagnostics.py), and this edit must leave an analysis pending.
INSERTED = "EDITED_FIRST = 1\n"


async def test_actions_during_a_pending_analysis_answer_at_once_and_resolve_on_the_new_text(
    client: LanguageClient, tmp_path: Path
) -> None:
    # Unversioned `changes` (Neovim 0.7): nothing on the client refuses a stale edit.
    caps = client_capabilities("neovim@v0.7.0")
    await initialize(client, settings={"target": "modern"}, capabilities=caps)
    text = big_source(300_000)  # long enough that its analysis is still running below
    uri = open_text(client, tmp_path / "big.py", text)
    published = await wait_published(client, uri, version=1)
    diag = next(d for d in published.diagnostics if d.code == "XLA101")
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
    new_text = INSERTED + text
    # As VS Code does: the on-screen diagnostic has moved down with the inserted line.
    moved = types.Range(
        types.Position(diag.range.start.line + 1, diag.range.start.character),
        types.Position(diag.range.end.line + 1, diag.range.end.character),
    )
    on_screen = types.Diagnostic(
        range=moved, message=diag.message, code=diag.code, source=diag.source, data=diag.data
    )
    started = time.monotonic()
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=moved,
            context=types.CodeActionContext(diagnostics=[on_screen], only=["quickfix"]),
        )
    )
    answered_in = time.monotonic() - started
    assert not any(p.version == 2 for p in client.published), "the analysis was not pending"
    quick = next((a for a in actions or [] if a.title.endswith("(XLA101)")), None)
    assert quick is not None, f"no quick fix while the analysis was pending: {actions}"
    assert answered_in < 1.0
    # Resolved before the new analysis is done: the edit is made on the new text.
    resolved = await asyncio.wait_for(client.code_action_resolve_async(quick), 60)
    assert resolved.edit is not None
    fixed = apply_text_edits(new_text, edits_of(resolved.edit, uri)[0])
    target = new_text.split("\n")[moved.start.line]
    assert ".cuda()" in target
    fixed_lines = fixed.split("\n")
    assert target.replace(".cuda()", ".to(torch_xla.device())") in fixed_lines
    assert fixed.count(".cuda()") == new_text.count(".cuda()") - 1
    assert fixed_lines.count(INSERTED.rstrip("\n")) == 1


async def test_an_edit_during_the_first_analysis_publishes_only_the_new_text(
    client: LanguageClient, tmp_path: Path
) -> None:
    await initialize(client, settings={"target": "modern"})
    text = big_source(300_000)
    uri = open_text(client, tmp_path / "big.py", text)
    await asyncio.sleep(0.2)  # the analysis of version 1 is running now
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
    # Two analyses of a 300,000-character file: on a loaded 2-core machine over 30 s (the
    # order is what this test is about, not the speed: bench/lsp_latency.py measures that).
    published = await wait_published(client, uri, version=2, timeout=4 * TIMEOUT)
    cuda_lines = [i for i, line in enumerate((INSERTED + text).split("\n")) if ".cuda()" in line]
    xla101 = sorted(d.range.start.line for d in published.diagnostics if d.code == "XLA101")
    assert xla101 == cuda_lines
    await asyncio.sleep(0.5)
    assert [p.version for p in client.published if p.uri == uri] == [2]
