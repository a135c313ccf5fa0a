"""A comment-only edit gets its diagnostics at once, carried over from the last analysis
(engine/carry_over.py), with no rule run; the analysis of the new text waits for a pause in
the typing, and a quick fix asked for meanwhile is still built on the text the editor has.
A code edit is analysed as before."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import apply_text_edits, edits_of, initialize, open_text, wait_published
from tests.lsp.test_debounce import change
from tests.lsp.test_large_documents import server_stats

TEXT = (
    "import torch\n"
    "\n"
    "model = torch.nn.Linear(4, 2)\n"
    "x = torch.zeros(3).cuda()  # données\n"
    "y = torch.ones(2).cuda()\n"
)


def _shown(params: types.PublishDiagnosticsParams) -> list[tuple]:
    return [(d.code, d.message, d.range) for d in params.diagnostics]


async def test_a_comment_edit_is_published_at_once_with_the_findings_moved(
    client: LanguageClient, tmp_path: Path
):
    await initialize(client, settings={"target": "modern"})
    uri = open_text(client, tmp_path / "carry.py", TEXT)
    first = await wait_published(client, uri, version=1)
    await asyncio.sleep(0.2)
    before = await server_stats(client)
    change(client, uri, 2, 1, "# a note about the model, ünïcode\n")
    carried = await wait_published(client, uri, version=2)
    during = await server_stats(client)
    assert during.carried_publishes == before.carried_publishes + 1
    assert during.analyses == before.analyses, "a rule ran for a comment edit"
    assert [(c, m, r.start.line + 1) for c, m, r in _shown(first)] == [
        (c, m, r.start.line) for c, m, r in _shown(carried)
    ]
    assert [d.code for d in carried.diagnostics].count("XLA101") == 2

    # A quick fix asked for now resolves on the new text (it starts the analysis).
    new_text = "import torch\n# a note about the model, ünïcode\n" + TEXT.split("\n", 1)[1]
    at = types.Position(line=4, character=4)
    actions = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(at, at),
                context=types.CodeActionContext(diagnostics=[]),
            )
        ),
        60,
    )
    quick = next(a for a in actions or [] if "XLA101" in a.title or "device" in a.title.lower())
    resolved = await asyncio.wait_for(client.code_action_resolve_async(quick), 60)
    assert resolved.edit is not None
    fixed = apply_text_edits(new_text, edits_of(resolved.edit, uri)[0])
    assert "# a note about the model, ünïcode\n" in fixed
    assert "torch.ones(2).cuda()" not in fixed or "torch.zeros(3).cuda()" not in fixed


async def test_the_analysis_follows_a_pause_and_says_the_same(
    client: LanguageClient, tmp_path: Path
):
    await initialize(client, settings={"target": "modern"})
    uri = open_text(client, tmp_path / "pause.py", TEXT)
    await wait_published(client, uri, version=1)
    await asyncio.sleep(0.2)
    before = await server_stats(client)
    change(client, uri, 2, 2, "\n")
    await wait_published(client, uri, version=2)
    await asyncio.sleep(2.0)  # past the pause after which the new text is analysed
    after = await server_stats(client)
    assert after.analyses == before.analyses + 1
    # Its diagnostics equal the carried ones: published once, not twice.
    assert [p.version for p in client.published if p.uri == uri].count(2) == 1  # type: ignore[attr-defined]


async def test_a_code_edit_runs_the_rules(client: LanguageClient, tmp_path: Path):
    await initialize(client, settings={"target": "modern"})
    uri = open_text(client, tmp_path / "code.py", TEXT)
    await wait_published(client, uri, version=1)
    await asyncio.sleep(0.2)
    before = await server_stats(client)
    change(client, uri, 2, 5, "z = torch.empty(1).cuda()\n")
    published = await wait_published(client, uri, version=2)
    after = await server_stats(client)
    assert after.carried_publishes == before.carried_publishes
    assert after.analyses == before.analyses + 1
    assert [d.code for d in published.diagnostics].count("XLA101") == 3
