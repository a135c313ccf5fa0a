"""``xla-lens.convert``: convert one document and hand the edit to the client
(workspace/applyEdit). The server never writes files; the editor applies (and can undo)."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types

from ..engine.leftover import EDITOR_REVIEW, leftover
from . import fixes
from .actions import CONVERT_TITLE, workspace_edit
from .core import XlaLensServer
from .documents import current_entry

CONVERT = "xla-lens.convert"


def _uri_of(args: tuple[Any, ...]) -> str | None:
    """Accepts ``"file:///x.py"``, ``{"uri": ...}`` or VS Code's ``{"external": ...}``."""
    if not args:
        return None
    first = args[0]
    if isinstance(first, str):
        return first
    if isinstance(first, dict):
        for key in ("uri", "external"):
            if isinstance(first.get(key), str):
                return first[key]
    return None


async def convert_document(ls: XlaLensServer, uri: str) -> dict[str, Any]:
    entry = await current_entry(ls, uri)
    if entry is None:
        return {"applied": False, "reason": f"{uri} is not open (or is not Python)"}
    if not entry.ok:
        return {"applied": False, "reason": "the file does not parse; fix the syntax error first"}
    outcome = await asyncio.to_thread(fixes.convert, entry)
    remaining = [
        f"{f.code} line {f.span.start.line + 1}: {f.manual or f.message}" for f in outcome.remaining
    ]
    left = leftover(outcome.remaining)
    summary = {
        "remaining": remaining,
        "leftover": left.statement(EDITOR_REVIEW),
        "offDevice": [f"{f.code} line {f.span.start.line + 1}" for f in left.off_device],
        "deviceByHand": [f"{f.code} line {f.span.start.line + 1}" for f in left.device_by_hand],
        "review": len(left.review),
        "manual": len(left.manual),
    }
    if not outcome.changed:
        return {"applied": False, "changed": False, **summary}
    edit = workspace_edit(ls, uri, entry.version, entry.source, outcome.source, entry.encoding)
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=CONVERT_TITLE)
    )
    if not result.applied:
        ls.show_client(
            f"xla-lens: the editor did not apply the conversion: {result.failure_reason or 'no reason given'}"
        )
    return {
        "applied": bool(result.applied),
        "changed": True,
        "fixed": outcome.applied,
        **summary,
    }


def register(ls: XlaLensServer) -> None:
    @ls.command(CONVERT)
    @ls.guarded(CONVERT, default={"applied": False, "reason": "internal error (see the log)"})
    async def convert(ls: XlaLensServer, *args: Any) -> dict[str, Any]:
        uri = _uri_of(args)
        if uri is None:
            return {"applied": False, "reason": "usage: xla-lens.convert <document uri>"}
        return await convert_document(ls, uri)
