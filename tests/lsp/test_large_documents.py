"""Large documents: requests arriving while an analysis runs share it, and closing a
document gives its memory back. Counted by the server itself (``xla-lens/stats``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import initialize, open_text, wait_published

UNIT = "def step_{i}():\n    x_{i} = torch.zeros(3).cuda()\n    return x_{i}.sum()\n\n\n"


def big_source(size: int) -> str:
    parts, total, i = ["import torch\n\n\n"], 0, 0
    while total < size:
        parts.append(UNIT.format(i=i))
        total += len(parts[-1])
        i += 1
    return "".join(parts)


def padded_source(size: int, code: int = 200_000) -> str:
    """``size`` characters: ``code`` of them real code with findings, the rest comments, so
    that four analyses of a 2 MB file fit in a short test on a slow machine."""
    parts, total, i = [big_source(code)], code, 0
    while total < size:
        parts.append(f"# padding line {i}: the rest of a large generated file\n")
        total += len(parts[-1])
        i += 1
    return "".join(parts)


async def server_stats(client: LanguageClient) -> Any:
    return await asyncio.wait_for(
        client.protocol.send_request_async("xla-lens/stats", {}), timeout=60
    )


def close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


async def test_hovers_during_a_pending_analysis_wait_for_it(client: LanguageClient, tmp_path: Path):
    await initialize(client, settings={"target": "modern"})
    text = big_source(300_000)
    lines = text.split("\n")
    cuda_lines = [i for i, line in enumerate(lines) if ".cuda()" in line][:4]
    uri = open_text(client, tmp_path / "big.py", text)
    hovers = [
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=n, character=lines[n].index(".cuda") + 2),
            )
        )
        for n in cuda_lines
    ]
    answers = await asyncio.wait_for(asyncio.gather(*hovers), timeout=120)
    await wait_published(client, uri, version=1)
    assert all(a is not None and "XLA101" in a.contents.value for a in answers)
    assert (await server_stats(client)).analyses == 1


async def test_closing_large_documents_returns_their_memory(client: LanguageClient, tmp_path: Path):
    await initialize(client, settings={"target": "modern"})
    text = padded_source(2_000_000)
    path = tmp_path / "big.py"
    # The baseline is a server that has analysed something: the rule modules it imports on
    # the first analysis stay loaded (code, not a document's memory).
    small = tmp_path / "small.py"
    small_uri = open_text(client, small, "import torch\nx = torch.zeros(2).cuda()\n")
    await wait_published(client, small_uri, version=1)
    close(client, small_uri)
    idle_kb = (await server_stats(client)).rss_kb
    after_close_kb, peak_kb = [], 0
    for _cycle in range(4):
        seen = len(client.published)  # type: ignore[attr-defined]
        uri = open_text(client, path, text)
        published = await wait_published(client, uri, version=1, after=seen)
        assert published.diagnostics
        close(client, uri)
        stats = await server_stats(client)
        assert stats.cached_documents == 0 and stats.open_documents == 0
        after_close_kb.append(stats.rss_kb)
        peak_kb = stats.peak_rss_kb
    figures = f"idle {idle_kb}, peak {peak_kb}, after each close {after_close_kb} (KiB)"
    print(figures)
    # Cycles do not pile up...
    assert max(after_close_kb[1:]) <= after_close_kb[0] * 1.2, figures
    # ...and a close hands back most of what the analysis took (before, ~85% stayed).
    for rss in after_close_kb:
        assert rss - idle_kb <= 0.5 * (peak_kb - idle_kb), figures
