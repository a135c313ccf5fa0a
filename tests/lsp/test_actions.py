"""Code actions and the convert command, end to end, checked against the engine."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities
from xla_lens.engine import analyze, fix_source
from xla_lens.engine.fixing import apply_fix
from xla_lens.lsp.fixes import is_conversion

from tests.lsp.lsp_helpers import (
    DATA,
    apply_text_edits,
    edits_of,
    initialize,
    open_text,
    send_edits,
    wait_published,
)

SAMPLE = DATA / "train_cuda.py"


async def _open_sample(client: LanguageClient, **init) -> tuple[str, str, list[types.Diagnostic]]:
    await initialize(client, settings={"target": "modern"}, **init)
    uri = open_text(client, SAMPLE)
    published = await wait_published(client, uri, version=1)
    return uri, SAMPLE.read_text(encoding="utf-8"), list(published.diagnostics)


async def _actions(client: LanguageClient, uri: str, diag: types.Diagnostic, only=None):
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag], only=only),
        )
    )


async def test_quick_fix_resolves_lazily_to_the_engines_fix_and_clears_the_diagnostic(
    client: LanguageClient,
):
    uri, text, diags = await _open_sample(client)
    # The .cuda() on the line with non-ASCII identifiers and an emoji comment.
    diag = next(d for d in diags if d.code == "XLA101" and d.range.start.line == 5)
    actions = await _actions(client, uri, diag)
    titles = [a.title for a in actions]
    quick = [
        a
        for a in actions
        if a.kind == types.CodeActionKind.QuickFix and a.title.endswith("(XLA101)")
    ]
    assert len(quick) == 1 and "Replace .cuda() with .to(device)" in quick[0].title
    assert quick[0].is_preferred
    assert quick[0].edit is None  # built lazily
    assert "Disable XLA101 for this line" in titles
    assert "Fix all auto-fixable xla-lens problems" in titles
    assert "Convert to PyTorch/XLA" in titles

    resolved = await client.code_action_resolve_async(quick[0])
    edits, version = edits_of(resolved.edit, uri)
    assert version == 1
    finding = next(
        f
        for f in analyze(text, str(SAMPLE), target="modern").findings
        if f.code == "XLA101" and f.span.start.line == 5
    )
    expected = apply_fix(text, finding)
    assert apply_text_edits(text, edits) == expected
    # Minimal: one edit on that one line, not the whole file.
    assert len(edits) == 1 and edits[0].range.start.line == edits[0].range.end.line == 5

    n = len(client.published)
    send_edits(client, uri, 2, edits)
    after = await wait_published(client, uri, version=2, after=n)
    assert [d.range.start.line for d in after.diagnostics if d.code == "XLA101"] == [4, 6]


async def test_disable_for_line_adds_a_suppression_comment(client: LanguageClient):
    uri, text, diags = await _open_sample(client)
    diag = next(d for d in diags if d.code == "XLA101" and d.range.start.line == 6)
    actions = await _actions(client, uri, diag)
    disable = next(a for a in actions if a.title == "Disable XLA101 for this line")
    resolved = await client.code_action_resolve_async(disable)
    edits, _ = edits_of(resolved.edit, uri)
    new = apply_text_edits(text, edits)
    assert new.splitlines()[6] == text.splitlines()[6] + "  # xla-lens: ignore[XLA101]"
    assert new.splitlines()[5] == text.splitlines()[5]

    n = len(client.published)
    send_edits(client, uri, 2, edits)
    after = await wait_published(client, uri, version=2, after=n)
    assert [d.range.start.line for d in after.diagnostics if d.code == "XLA101"] == [4, 5]


async def test_fix_all_and_only_filter(client: LanguageClient):
    uri, text, diags = await _open_sample(client)
    diag = diags[0]
    only_fix_all = await _actions(client, uri, diag, only=["source.fixAll"])
    assert [a.kind for a in only_fix_all] == ["source.fixAll.xla"]
    resolved = await client.code_action_resolve_async(only_fix_all[0])
    edits, _ = edits_of(resolved.edit, uri)
    expected = fix_source(text, str(SAMPLE), target="modern").source
    assert expected != text
    assert apply_text_edits(text, edits) == expected

    only_quick = await _actions(client, uri, diag, only=["quickfix"])
    assert {a.kind for a in only_quick} == {"quickfix"}


async def test_convert_command_applies_the_engines_conversion_through_apply_edit(
    client: LanguageClient,
):
    applied: list[types.ApplyWorkspaceEditParams] = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        applied.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    uri, text, _ = await _open_sample(client)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="xla-lens.convert", arguments=[uri])
    )
    assert result["applied"] is True and result["changed"] is True
    assert "XLA101" in result["fixed"]
    assert len(applied) == 1 and applied[0].label == "Convert to PyTorch/XLA"
    edits, version = edits_of(applied[0].edit, uri)
    assert version == 1
    converted = apply_text_edits(text, edits)
    assert converted == fix_source(text, str(SAMPLE), target="modern", accept=is_conversion).source
    # With no performance-only fixes in this sample, convert is what `xla-lens fix` writes.
    findings = analyze(text, str(SAMPLE), target="modern").findings
    if all(is_conversion(f) for f in findings if f.fix is not None and f.fix.safe):
        assert converted == fix_source(text, str(SAMPLE), target="modern").source
    assert "torch_xla.device()" in converted and ".cuda()" not in converted

    # The same action from the code-action menu gives the same text.
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
            ),
            context=types.CodeActionContext(diagnostics=[], only=["source.convert"]),
        )
    )
    resolved = await client.code_action_resolve_async(actions[0])
    assert apply_text_edits(text, edits_of(resolved.edit, uri)[0]) == converted


async def test_client_without_resolve_gets_edits_eagerly(client: LanguageClient):
    # Neovim 0.7's real capabilities (no documentChanges) minus codeAction resolve.
    caps = client_capabilities("neovim@v0.7.0")
    caps.text_document.code_action.resolve_support = None
    uri, text, diags = await _open_sample(client, capabilities=caps)
    diag = next(d for d in diags if d.code == "XLA101" and d.range.start.line == 4)
    actions = await _actions(client, uri, diag, only=["quickfix"])
    quick = next(a for a in actions if a.title.endswith("(XLA101)"))
    assert quick.edit is not None
    assert quick.edit.document_changes is None  # plain `changes` for this client
    edits, _ = edits_of(quick.edit, uri)
    assert "torch_xla.device()" in apply_text_edits(text, edits)


async def test_convert_says_what_still_keeps_the_script_off_the_xla_device(
    client: LanguageClient, tmp_path
):
    """A --device option that defaults to the CPU: its fix waits for review, so Convert must
    not just say "converted": it names the line that still keeps the script off XLA."""

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        return types.ApplyWorkspaceEditResult(applied=True)

    text = (
        "import argparse\n"
        "import torch\n"
        "from torch import nn\n\n"
        "parser = argparse.ArgumentParser()\n"
        'parser.add_argument("--device", type=str, default="cpu", help="cpu, cuda or cuda:1")\n'
        "args = parser.parse_args()\n"
        "model = nn.Linear(4, 1).to(args.device)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    loss = model(torch.randn(2, 4).to(args.device)).sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    torch.cuda.synchronize()\n"
    )
    path = tmp_path / "train_cpu_default.py"
    path.write_text(text)
    await initialize(client, settings={"target": "modern"})
    uri = open_text(client, path)
    await wait_published(client, uri, version=1)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="xla-lens.convert", arguments=[uri])
    )
    assert result["changed"] is True
    # Line numbers of the converted text: the --device line moved down under the new imports.
    assert result["offDevice"] == ["XLA101 line 8"]
    assert result["review"] >= 1
    assert "does not reach the XLA device yet: see line 8 (XLA101)" in result["leftover"]
    assert 'for your review (the quick fixes marked "review")' in result["leftover"]
