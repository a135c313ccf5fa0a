"""``$/cancelRequest`` for an ``xla-lens.run`` request that has already been answered is a
no-op: it neither cancels nor refuses the document's next run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import initialize, open_text
from tests.lsp.test_run import accept_refreshes, execute

QUICK = 'print("done", flush=True)\n'


@pytest.mark.timeout(180)
async def test_cancel_request_after_the_run_finished_changes_nothing(
    client: LanguageClient, tmp_path: Path
) -> None:
    accept_refreshes(client)
    await initialize(client)
    script = tmp_path / "quick.py"
    script.write_text(QUICK)
    uri = open_text(client, script)
    params = types.ExecuteCommandParams(command="xla-lens.run", arguments=[{"uri": uri}])
    first = client.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="done-run")
    result = await asyncio.wait_for(asyncio.wrap_future(first), 120)
    assert result["status"] == "ok", result
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="done-run"))
    second = await execute(client, "xla-lens.run", {"uri": uri}, timeout=120)
    assert second["status"] == "ok", second
    assert second["pid"] != result["pid"]
