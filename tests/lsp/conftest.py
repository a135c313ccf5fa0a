from __future__ import annotations

import pytest_lsp
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import SERVER, prepare


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient):
    """A real client connected to ``python -m xla_lens.lsp``; each test initializes it."""
    prepare(lsp_client)
    yield
    await lsp_client.shutdown_session()
