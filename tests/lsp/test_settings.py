"""Settings: workspace/configuration per folder, didChangeConfiguration, pyproject layering."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import DATA, initialize, open_text, wait_published

SAMPLE = DATA / "train_cuda.py"


def _codes(diags) -> list[str]:
    return [d.code for d in diags]


async def test_configuration_change_republishes(client: LanguageClient):
    client.set_configuration({"target": "modern"}, section="xla-lens")
    await initialize(client)
    uri = open_text(client, SAMPLE)
    first = await wait_published(client, uri, version=1)
    xla101 = [d for d in first.diagnostics if d.code == "XLA101"]
    assert all(d.severity == types.DiagnosticSeverity.Warning for d in xla101)
    assert "torch_xla.device()" in xla101[0].message

    # Severity override and the legacy target: re-published without any edit.
    client.set_configuration(
        {"target": "legacy", "severity": {"XLA101": "error"}}, section="xla-lens"
    )
    n = len(client.published)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    second = await wait_published(client, uri, version=1, after=n)
    xla101 = [d for d in second.diagnostics if d.code == "XLA101"]
    assert xla101 and all(d.severity == types.DiagnosticSeverity.Error for d in xla101)
    assert "xm.xla_device()" in xla101[0].message

    client.set_configuration({"target": "modern", "ignore": ["XLA101"]}, section="xla-lens")
    n = len(client.published)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    third = await wait_published(client, uri, version=1, after=n)
    assert "XLA101" not in _codes(third.diagnostics)


async def test_pushed_settings_for_clients_without_configuration_requests(client: LanguageClient):
    caps = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=False),
        text_document=types.TextDocumentClientCapabilities(),
    )
    await initialize(client, capabilities=caps, settings={"target": "legacy"})
    uri = open_text(client, SAMPLE)
    first = await wait_published(client, uri, version=1)
    assert "xm.xla_device()" in next(d for d in first.diagnostics if d.code == "XLA101").message
    n = len(client.published)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"xla-lens": {"select": ["XLA2"]}})
    )
    second = await wait_published(client, uri, version=1, after=n)
    assert "XLA101" not in _codes(second.diagnostics)


async def test_multi_root_folders_use_their_own_pyproject_and_editor_settings(
    client: LanguageClient,
):
    a, b = DATA / "proj_a", DATA / "proj_b"
    await initialize(client, folders=[a, b])
    ua = open_text(client, a / "train.py")
    ub = open_text(client, b / "train.py")
    pa = await wait_published(client, ua, version=1)
    pb = await wait_published(client, ub, version=1)
    # proj_a's pyproject says legacy, proj_b's says modern.
    assert "xm.xla_device()" in next(d for d in pa.diagnostics if d.code == "XLA101").message
    assert "torch_xla.device()" in next(d for d in pb.diagnostics if d.code == "XLA101").message

    # Editor settings scoped to proj_a win over its pyproject; proj_b is unaffected.
    client.set_configuration({"target": "modern"}, section="xla-lens", scope_uri=a.as_uri())
    n = len(client.published)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    pa2 = await wait_published(client, ua, version=1, after=n)
    pb2 = await wait_published(client, ub, version=1, after=n)
    assert "torch_xla.device()" in next(d for d in pa2.diagnostics if d.code == "XLA101").message
    assert "torch_xla.device()" in next(d for d in pb2.diagnostics if d.code == "XLA101").message


async def test_bad_settings_are_reported_not_fatal(client: LanguageClient):
    client.set_configuration({"target": "tpu-please"}, section="xla-lens")
    await initialize(client)
    uri = open_text(client, SAMPLE)
    published = await wait_published(client, uri, version=1)
    assert "XLA101" in _codes(published.diagnostics)
    assert any("target must be one of" in m.message for m in client.messages)
