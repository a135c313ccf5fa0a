"""xla-lens.run end to end: a real pytest-lsp client, the real server over stdio, the real
runner and torch_xla on CPU PJRT."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.lsp.lsp_helpers import DATA, SERVER, initialize, open_text, prepare, wait_published

RECOMPILE = DATA / "run_recompile.py"
FOREVER = DATA / "run_forever.py"
RUN_TIMEOUT = 120.0  # one torch_xla run on a shared 2-core machine


@pytest_lsp.fixture(config=SERVER)
async def self_closing(lsp_client: LanguageClient):
    """Like ``client``, for a test that sends shutdown itself: a second shutdown would
    never be answered, so teardown only sends exit."""
    prepare(lsp_client)
    yield
    lsp_client.exit(None)


def marked(path: Path, marker: str, text: str | None = None) -> int:
    """0-based line holding ``marker``: tests never hard-code line numbers."""
    lines = (path.read_text() if text is None else text).splitlines()
    return next(i for i, line in enumerate(lines) if marker in line)


def vscode_with_inlay_hints() -> types.ClientCapabilities:
    # pytest-lsp's VS Code profile (1.65) predates LSP inlay hints; current VS Code has them.
    caps = client_capabilities("visual-studio-code")
    caps.workspace.inlay_hint = types.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    caps.text_document.inlay_hint = types.InlayHintClientCapabilities()
    return caps


def accept_refreshes(client: LanguageClient) -> list[str]:
    """Answer the refresh requests the capability profile claims to support (pytest-lsp has
    no handler for them, and an unanswered request fails the test)."""
    refreshes: list[str] = []

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def inlay_refresh(_params: None) -> None:
        refreshes.append("inlay")

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(_params: None) -> None:
        refreshes.append("lens")

    return refreshes


def record_run_events(client: LanguageClient) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []

    @client.feature("xla-lens/runEvent")
    def on_event(params: Any) -> None:
        # pygls hands a custom method's params over as a namedtuple: back to a plain dict.
        events.append(params if isinstance(params, dict) else params._asdict())

    return events


async def execute(client: LanguageClient, command: str, *args: Any, timeout: float = 30) -> Any:
    params = types.ExecuteCommandParams(command=command, arguments=list(args))
    return await asyncio.wait_for(client.workspace_execute_command_async(params), timeout)


async def hints(client: LanguageClient, uri: str) -> list[types.InlayHint]:
    whole = types.Range(types.Position(0, 0), types.Position(10_000, 0))
    params = types.InlayHintParams(text_document=types.TextDocumentIdentifier(uri), range=whole)
    return await client.text_document_inlay_hint_async(params) or []


async def lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri))
    return await client.text_document_code_lens_async(params) or []


async def until(predicate: Any, timeout: float = 30.0) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)


def assert_group_gone(pgid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


@pytest.mark.xla
@pytest.mark.timeout(240)
async def test_run_streams_progress_hints_and_merged_diagnostics(client: LanguageClient):
    refreshes = accept_refreshes(client)
    events = record_run_events(client)
    client.set_configuration(
        {"run": {"steps": 4, "env": {"PJRT_DEVICE": "CPU"}}}, section="xla-lens"
    )
    await initialize(client, capabilities=vscode_with_inlay_hints())
    uri = open_text(client, RECOMPILE)
    static = await wait_published(client, uri, version=1)
    assert static.diagnostics, "the script should have static findings to coexist with"

    result = await execute(client, "xla-lens.run", {"uri": uri}, timeout=RUN_TIMEOUT)
    assert result["device"] == "CPU" and result["status"] == "step-limit", result
    assert result["steps"] == 4 and result["compiles"] >= 4 and not result["cancelled"]
    # run.env's PJRT_DEVICE=CPU is the request, and the reason says so.
    assert result["reason"] == "CPU PJRT was requested"

    # Progress: begin, one report per step, end with the result.
    (token,) = client.progress_reports
    reports = client.progress_reports[token]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].cancellable
    assert reports[0].title == "Run on XLA: run_recompile.py"
    steps = [r.message for r in reports if isinstance(r, types.WorkDoneProgressReport)]
    assert steps.pop(0) == "starting · device CPU"
    assert steps[0].startswith("step 1 · ") and steps[0].endswith(" · device CPU")
    assert " 1 compiles" not in " ".join(steps)
    assert len(steps) == 4
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert reports[-1].message.startswith("step-limit · 4 steps")

    kinds = [e["type"] for e in events]
    assert {"device", "started", "compile", "step", "problem", "exit"} <= set(kinds)
    assert kinds[-1] == "summary"
    # One short sentence on screen; the whole reason in the log (and the lens tooltip).
    device_msg = [m.message for m in client.messages if m.type == types.MessageType.Info]
    assert "xla-lens: run_recompile.py: Running on CPU PJRT (requested)" in device_msg
    logged = [m.message for m in client.log_messages]
    assert "xla-lens: device CPU: CPU PJRT was requested" in logged
    assert result["message"].startswith("step-limit · 4 steps · ")
    assert result["report"].startswith("xla-lens: run_recompile.py: ")
    assert refreshes.count("inlay") >= 1 and "lens" in refreshes

    recompile, host = marked(RECOMPILE, "# RECOMPILE"), marked(RECOMPILE, "# HOST-READ")
    # The recompilation is explained at its cause: where the growing batch is made.
    cause = marked(RECOMPILE, "x = torch.randn(batch")
    got = {h.position.line: h for h in await hints(client, uri)}
    assert set(got) == {cause, recompile, host}
    text_lines = RECOMPILE.read_text().splitlines()
    assert got[recompile].position.character == len(text_lines[recompile])
    assert got[cause].label.startswith("recompiles: ") and len(got[cause].label) <= 40
    assert got[recompile].label.startswith(f"recompiled: see line {cause + 1} · ")
    assert len(got[recompile].label) <= 40 and "compiles" in got[recompile].label
    assert "host read" in got[host].label and got[host].padding_left

    last = client.published[-1]
    assert last.uri == uri
    sources = {d.source for d in last.diagnostics}
    assert sources == {"xla-lens", "xla-lens run"}
    run_diags = {
        (d.code, d.range.start.line) for d in last.diagnostics if d.source == "xla-lens run"
    }
    assert ("recompilation", cause) in run_diags and ("host-read", host) in run_diags

    titles = {lens.command.title: lens.range.start.line for lens in await lenses(client, uri)}
    main_line = marked(RECOMPILE, 'if __name__ == "__main__":')
    assert titles["▶ Run on GPU (XLA)"] == main_line
    assert any(t.startswith("last run: CPU · 4 steps · ") for t in titles), titles

    # Edit: a new first line shifts the results; rewriting the host-read line drops its own.
    old = text_lines[host]
    new = old.replace("loss.item()", "0.0")
    n = len(client.published)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(host, 0), types.Position(host, len(old))),
                    text=new,
                ),
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                    text="# a new first line\n",
                ),
            ],
        )
    )
    got = {h.position.line: h for h in await hints(client, uri)}
    assert set(got) == {cause + 1, recompile + 1}
    # "see line N" follows the cause line to where it is now (1-based).
    assert got[recompile + 1].label.startswith(f"recompiled: see line {cause + 2} · ")

    def merged_v2() -> types.PublishDiagnosticsParams | None:
        return next(
            (
                p
                for p in client.published[n:]
                if p.version == 2 and any(d.source == "xla-lens run" for d in p.diagnostics)
            ),
            None,
        )

    await until(lambda: merged_v2() is not None)
    after = merged_v2()
    assert any(d.source == "xla-lens" for d in after.diagnostics)
    lines = {d.range.start.line for d in after.diagnostics if d.source == "xla-lens run"}
    # The recompilation at its cause; compile-bound (the whole run) may sit on the sync.
    assert {cause + 1} <= lines <= {cause + 1, recompile + 1}


@pytest.mark.timeout(120)
async def test_cancel_kills_the_process_group_and_a_second_run_is_refused(
    self_closing: LanguageClient,
):
    client = self_closing
    accept_refreshes(client)
    events = record_run_events(client)
    await initialize(client)
    uri = open_text(client, FOREVER)

    def ready_count() -> int:
        return sum(1 for e in events if e["type"] == "output" and e.get("text") == "ready")

    def pids() -> list[int]:
        return [e["pid"] for e in events if e["type"] == "started"]

    first = asyncio.ensure_future(execute(client, "xla-lens.run", uri, timeout=60))
    await until(lambda: ready_count() == 1)
    second = await execute(client, "xla-lens.run", {"uri": uri})
    assert second["status"] == "refused" and "already running" in second["reason"]
    assert [lens.command.title for lens in await lenses(client, uri)] == ["■ Cancel XLA run"]

    assert (await execute(client, "xla-lens.cancelRun", {"uri": uri}))["cancelled"] is True
    result = await first
    assert result["status"] == "cancelled" and result["cancelled"] is True
    assert result["message"].startswith("cancelled · ") and not result["problems"]
    assert result["pid"] == pids()[0]
    assert_group_gone(result["pid"])
    token = next(iter(client.progress_reports))
    assert "cancelled" in client.progress_reports[token][-1].message

    # The progress notification's Cancel button does the same.
    again = asyncio.ensure_future(execute(client, "xla-lens.run", {"uri": uri}, timeout=60))
    await until(lambda: ready_count() == 2)
    token = [t for t in client.progress_reports if t != token][0]
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await again
    assert result["status"] == "cancelled" and result["pid"] == pids()[1]
    assert_group_gone(result["pid"])
    assert (await execute(client, "xla-lens.cancelRun", {"uri": uri}))["cancelled"] is False

    # Shutting the server down mid-run kills the script and still answers the run request.
    last = asyncio.ensure_future(execute(client, "xla-lens.run", {"uri": uri}, timeout=60))
    await until(lambda: ready_count() == 3)
    await asyncio.wait_for(client.shutdown_async(None), 30)
    result = await last
    assert result["status"] == "cancelled" and result["pid"] == pids()[2]
    assert_group_gone(result["pid"])


@pytest.mark.timeout(120)
async def test_refusals_and_the_disk_version_with_flat_settings(
    client: LanguageClient, tmp_path: Path
):
    accept_refreshes(client)
    events = record_run_events(client)
    client.set_configuration(
        {"run.args": ["--lr", "0.1"], "run.env": {"XLA_LENS_PROBE": "seen"}},
        section="xla-lens",
    )
    await initialize(client, folders=[tmp_path])

    broken = tmp_path / "broken.py"
    broken.write_text("x = 1\ndef f(:\n")
    result = await execute(client, "xla-lens.run", {"uri": broken.as_uri()})
    assert result["status"] == "refused" and "broken.py:2: SyntaxError" in result["reason"]
    result = await execute(client, "xla-lens.run", {"uri": "untitled:Untitled-1"})
    assert result["status"] == "refused" and "only files on disk" in result["reason"]
    assert not [e for e in events if e["type"] == "started"]

    script = tmp_path / "echo.py"
    script.write_text("import os, sys\nprint('DISK', sys.argv[1:], os.environ['XLA_LENS_PROBE'])\n")
    uri = open_text(client, script, text="print('BUFFER')\n")
    result = await execute(client, "xla-lens.run", {"uri": uri}, timeout=60)
    assert result["status"] == "ok" and result["exit_code"] == 0, result
    out = [e["text"] for e in events if e["type"] == "output" and e["stream"] == "stdout"]
    assert out == ["DISK ['--lr', '0.1'] seen"]
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert any("unsaved changes" in m and "version on disk" in m for m in warnings), warnings
    assert any("SyntaxError" in m for m in warnings)
    assert sys.executable in next(e for e in events if e["type"] == "started")["argv"]


async def test_code_lens_sits_above_the_entry_point(client: LanguageClient, tmp_path: Path):
    await initialize(client)
    uri = open_text(client, RECOMPILE)
    (lens,) = await lenses(client, uri)
    assert lens.range.start.line == marked(RECOMPILE, 'if __name__ == "__main__":')
    assert lens.command.command == "xla-lens.run" and list(lens.command.arguments) == [{"uri": uri}]

    text = "import torch\n\n\n@decorated\ndef main():\n    pass\n"
    (lens,) = await lenses(client, open_text(client, tmp_path / "m.py", text=text))
    assert lens.range.start.line == marked(tmp_path, "@decorated", text)
    broken = "import torch\ndef main(:\n"  # mid-edit: still found, by its text
    (lens,) = await lenses(client, open_text(client, tmp_path / "b.py", text=broken))
    assert lens.range.start.line == 1
    (lens,) = await lenses(client, open_text(client, tmp_path / "n.py", text="x = 1\n"))
    assert lens.range.start.line == 0
