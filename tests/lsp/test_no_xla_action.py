"""A run that never used XLA: the "no-xla" run diagnostic offers Convert as its quick fix.
End to end: the real server runs a real unconverted CUDA-style script (plain PyTorch on CPU)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import (
    apply_text_edits,
    edits_of,
    initialize,
    open_text,
    wait_published,
)

UNCONVERTED = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 2).to(device)
for step in range(2):
    loss = model(torch.randn(4, 8, device=device)).pow(2).mean()
    loss.backward()
    print(f"step {step}", flush=True)
"""


def _answer_refreshes(client: LanguageClient) -> None:
    # The capability profile claims refresh support; pytest-lsp has no handler for them.
    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(_params: None) -> None:
        return None

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def inlay_refresh(_params: None) -> None:
        return None


def _no_xla(client: LanguageClient, uri: str) -> types.Diagnostic | None:
    for params in reversed(client.published):  # type: ignore[attr-defined]
        if params.uri == uri:
            found = [d for d in params.diagnostics if d.code == "no-xla"]
            return found[0] if found else None
    return None


async def _actions(
    client: LanguageClient, uri: str, diagnostics: list[types.Diagnostic], rng: types.Range
) -> list[Any]:
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri),
        range=rng,
        context=types.CodeActionContext(diagnostics=diagnostics),
    )
    return await asyncio.wait_for(client.text_document_code_action_async(params), 30) or []


@pytest.mark.timeout(240)
async def test_no_xla_run_diagnostic_has_convert_as_its_quick_fix(
    client: LanguageClient, tmp_path: Path
):
    _answer_refreshes(client)
    script = tmp_path / "train.py"
    script.write_text(UNCONVERTED)
    await initialize(client, folders=[tmp_path])
    uri = open_text(client, script)
    static = await wait_published(client, uri, version=1)
    assert static.diagnostics

    run = types.ExecuteCommandParams(command="xla-lens.run", arguments=[{"uri": uri}])
    result = await asyncio.wait_for(client.workspace_execute_command_async(run), 180)
    assert result["status"] == "ok", result

    async def published_no_xla() -> types.Diagnostic:
        while (diag := _no_xla(client, uri)) is None:
            await asyncio.sleep(0.05)
        return diag

    diag = await asyncio.wait_for(published_no_xla(), 30)
    assert diag.source == "xla-lens run" and "never used the XLA device" in diag.message

    actions = await _actions(client, uri, [diag], diag.range)
    fixes = [a for a in actions if a.kind == types.CodeActionKind.QuickFix and a.diagnostics]
    convert = [a for a in fixes if a.diagnostics == (diag,) or a.diagnostics == [diag]]
    assert len(convert) == 1, actions
    action = convert[0]
    assert action.title == "Convert to PyTorch/XLA" and action.is_preferred

    # Resolving it gives the whole conversion, the same edit as the Convert source action.
    resolved = await asyncio.wait_for(client.code_action_resolve_async(action), 60)
    source = next(a for a in actions if a.kind == "source.convert.xla")
    whole = await asyncio.wait_for(client.code_action_resolve_async(source), 60)
    assert resolved.edit is not None and resolved.edit == whole.edit
    edits, version = edits_of(resolved.edit, uri)
    converted = apply_text_edits(UNCONVERTED, edits)
    assert version == 1 and "torch_xla.device()" in converted and '"cuda"' not in converted

    # Without the run diagnostic in the context, no run quick fix is offered.
    others = await _actions(client, uri, [], diag.range)
    assert not [
        a
        for a in others
        if a.kind == types.CodeActionKind.QuickFix
        and a.is_preferred
        and a.title == "Convert to PyTorch/XLA"
    ]
