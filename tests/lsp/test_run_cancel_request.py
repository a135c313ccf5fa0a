"""``$/cancelRequest`` for a running ``xla-lens.run`` cancels the run itself: the script's
process group is gone and the document can be run again (before, the request was answered
"cancelled" while the script ran on and every new run was refused as "already running")."""

from __future__ import annotations

import asyncio
import os

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import initialize, open_text
from tests.lsp.test_run import (
    FOREVER,
    accept_refreshes,
    execute,
    lenses,
    record_run_events,
    until,
)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.timeout(120)
async def test_cancel_request_cancels_the_run(client: LanguageClient):
    accept_refreshes(client)
    events = record_run_events(client)
    await initialize(client)
    uri = open_text(client, FOREVER)

    def started() -> list[int]:
        return [e["pid"] for e in events if e["type"] == "started"]

    def ready() -> int:
        return sum(1 for e in events if e["type"] == "output" and e.get("text") == "ready")

    request_id = "run-to-cancel"
    params = types.ExecuteCommandParams(command="xla-lens.run", arguments=[{"uri": uri}])
    first = client.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id=request_id)
    await until(lambda: ready() == 1, timeout=60)
    pid = started()[0]
    assert _group_alive(pid)

    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=request_id))
    with pytest.raises((JsonRpcRequestCancelled, asyncio.CancelledError)):
        await asyncio.wait_for(asyncio.wrap_future(first), 30)
    await until(lambda: not _group_alive(pid), timeout=30)

    # The document is free again (its code lens stops offering Cancel once the runner has
    # reported the end): a new run is accepted, starts a new script, and can be cancelled
    # the ordinary way.
    async def cancel_offered() -> bool:
        return "■ Cancel XLA run" in [lens.command.title for lens in await lenses(client, uri)]

    deadline = asyncio.get_running_loop().time() + 30
    while await cancel_offered():
        assert asyncio.get_running_loop().time() < deadline, "the cancelled run stays active"
        await asyncio.sleep(0.1)
    second = asyncio.ensure_future(execute(client, "xla-lens.run", {"uri": uri}, timeout=60))
    await until(lambda: ready() == 2 or second.done(), timeout=60)
    assert not second.done(), second.result()
    assert started()[1] != pid
    assert (await execute(client, "xla-lens.cancelRun", {"uri": uri}))["cancelled"] is True
    result = await second
    assert result["status"] == "cancelled" and result["pid"] == started()[1]
    await until(lambda: not _group_alive(started()[1]), timeout=30)
