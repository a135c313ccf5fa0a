"""The server survives noisy code in its process and exposes a feature extension point."""

from __future__ import annotations

import asyncio
import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.lsp_helpers import DATA, initialize, open_text, prepare, wait_published

# A real extra feature, added the way later modules plug in: it prints to stdout on
# every analysis (as a chatty library would) and answers a custom request.
NOISY = """
from lsprotocol import types
from xla_lens.lsp import server

def noisy(ls):
    ls.analysis_listeners.append(lambda ls, entry: print("stray output", entry.uri))

    @ls.feature("xla-lens/ping")
    def ping(ls, params):
        print("more stray output")
        return {"pong": True}

server.FEATURES = (*server.FEATURES, noisy)
server.main()
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-c", NOISY]))
async def noisy_client(lsp_client: LanguageClient):
    prepare(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_stray_prints_do_not_corrupt_the_protocol(noisy_client: LanguageClient, capsys):
    await initialize(noisy_client, settings={"target": "modern"})
    uri = open_text(noisy_client, DATA / "train_cuda.py")
    published = await wait_published(noisy_client, uri, version=1)
    assert "XLA101" in [d.code for d in published.diagnostics]
    pong = await noisy_client.protocol.send_request_async("xla-lens/ping", {})
    assert pong.pong is True
    hover = await noisy_client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=4, character=12),
        )
    )
    assert hover is not None and "XLA101" in hover.contents.value

    # The prints went to stderr (forwarded here by pytest-lsp), not into the JSON-RPC
    # stream (pygls' own client would skip junk there; VS Code's would not).
    err = ""
    for _ in range(50):
        err += capsys.readouterr().err
        if "more stray output" in err:
            break
        await asyncio.sleep(0.1)
    assert "stray output file://" in err and "more stray output" in err
