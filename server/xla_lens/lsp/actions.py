"""Code actions: a quick fix and a "disable for this line" per finding, fix-all, and
"Convert to PyTorch/XLA". The list comes from the cached analysis (cheap); the edits are
built in ``codeAction/resolve`` (libcst work, in a thread) unless the client cannot
resolve them lazily."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from lsprotocol import types

from ..rules.base import Span
from . import fixes
from .core import XlaLensServer
from .diagnostics import SOURCE, to_diagnostic
from .documents import current_entry, is_open
from .positions import UTF16
from .state import Entry
from .textedits import minimal_edits

FIX_ALL_KIND = "source.fixAll.xla"
CONVERT_KIND = "source.convert.xla"
QUICKFIX = types.CodeActionKind.QuickFix
KINDS = [QUICKFIX, FIX_ALL_KIND, CONVERT_KIND]

FIX_ALL_TITLE = "Fix all auto-fixable xla-lens problems"
CONVERT_TITLE = "Convert to PyTorch/XLA"


def workspace_edit(
    ls: XlaLensServer, uri: str, version: int | None, old: str, new: str, encoding: str = UTF16
) -> types.WorkspaceEdit:
    """A versioned edit when the client supports it, so a stale edit is refused."""
    edits: list[types.TextEdit] = minimal_edits(old, new, encoding)
    if ls.client_supports("workspace.workspace_edit.document_changes"):
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=version
                    ),
                    edits=edits,  # type: ignore[arg-type]
                )
            ]
        )
    return types.WorkspaceEdit(changes={uri: edits})


def _wanted(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == o or kind.startswith(o + ".") for o in only)


def _data(entry: Entry, action: str, index: int | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "uri": entry.uri,
        "version": entry.version,
        "action": action,
        "index": index,
    }
    if index is not None:
        # Enough to find the same finding in a later analysis (see ``_same_finding``).
        f = entry.analysis.findings[index]
        data.update(code=f.code, message=f.message, line=f.span.start.line)
    return data


def _same_finding(entry: Entry, data: dict[str, Any]) -> int | None:
    """The index in ``entry`` of the finding an action listed from an older analysis was
    for: same rule and message, the nearest to where it was."""
    line = data.get("line")
    candidates = (
        [
            (abs(f.span.start.line - line), i)
            for i, f in enumerate(entry.analysis.findings)
            if f.code == data.get("code") and f.message == data.get("message")
        ]
        if isinstance(line, int)
        else []
    )
    return min(candidates)[1] if candidates else None


def _indices_from_context(entry: Entry, context: types.CodeActionContext) -> set[int]:
    """Findings the client names through the diagnostics it sends back."""
    out = set()
    for diag in context.diagnostics:
        data = diag.data if isinstance(diag.data, dict) else None
        if diag.source == SOURCE and data and data.get("version") == entry.version:
            index = data.get("index")
            if isinstance(index, int) and 0 <= index < len(entry.analysis.findings):
                out.add(index)
    return out


def list_actions(entry: Entry, params: types.CodeActionParams) -> list[types.CodeAction]:
    only = params.context.only
    if not entry.analysis.findings:
        return []
    span = Span(entry.pos(params.range.start), entry.pos(params.range.end))
    indices = {i for i, _ in entry.findings_in(span)} | _indices_from_context(entry, params.context)
    actions: list[types.CodeAction] = []
    findings = entry.analysis.findings
    if _wanted(QUICKFIX, only):
        for i in sorted(indices, key=lambda i: (findings[i].span.start, findings[i].code)):
            f = findings[i]
            diag = to_diagnostic(entry, f, i)
            if f.fix is not None:
                title = f.fix.title if f.fix.safe else f"{f.fix.title} (review: changes behaviour)"
                actions.append(
                    types.CodeAction(
                        title=f"{title} ({f.code})",
                        kind=QUICKFIX,
                        diagnostics=[diag],
                        is_preferred=f.fix.safe,
                        data=_data(entry, "fix", i),
                    )
                )
        for i in sorted(indices, key=lambda i: (findings[i].span.start, findings[i].code)):
            f = findings[i]
            if fixes.ignore_line_of(entry, f) is not None:
                actions.append(
                    types.CodeAction(
                        title=f"Disable {f.code} for this line",
                        kind=QUICKFIX,
                        diagnostics=[to_diagnostic(entry, f, i)],
                        data=_data(entry, "ignore", i),
                    )
                )
    safe = [f for f in findings if f.fix is not None and f.fix.safe]
    if safe and _wanted(FIX_ALL_KIND, only):
        actions.append(
            types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL_KIND, data=_data(entry, "fixAll"))
        )
    if any(fixes.is_conversion(f) for f in safe) and _wanted(CONVERT_KIND, only):
        actions.append(
            types.CodeAction(title=CONVERT_TITLE, kind=CONVERT_KIND, data=_data(entry, "convert"))
        )
    return actions


# The run problem "no-xla" (the script never used the XLA device) is fixed by converting it.
NO_XLA = "no-xla"
RUN_SOURCE = "xla-lens run"  # run_diagnostics.SOURCE


def run_problem_actions(entry: Entry, params: types.CodeActionParams) -> list[types.CodeAction]:
    """The quick fix of a "no-xla" run diagnostic: the Convert edit, resolved like the
    "Convert to PyTorch/XLA" source action, offered when the conversion has something to do.
    An edit rather than a command: lsprotocol clients decode a code action carrying a
    ``command`` as a bare Command."""
    if not _wanted(QUICKFIX, params.context.only):
        return []
    no_xla = [d for d in params.context.diagnostics if d.source == RUN_SOURCE and d.code == NO_XLA]
    convertible = any(
        f.fix is not None and f.fix.safe and fixes.is_conversion(f) for f in entry.analysis.findings
    )
    if not no_xla or not convertible:
        return []
    return [
        types.CodeAction(
            title=CONVERT_TITLE,
            kind=QUICKFIX,
            diagnostics=no_xla,
            is_preferred=True,
            data=_data(entry, "convert"),
        )
    ]


def new_source(entry: Entry, action: str, index: int | None) -> str | None:
    """The text after the action, or None when it has nothing to do."""
    from ..engine.apply import FixError  # libcst: loaded on the first fix, not at start

    compute: dict[str, Callable[[], str | None]] = {
        "fix": lambda: fixes.quick_fix(entry, index),  # type: ignore[arg-type]
        "ignore": lambda: fixes.ignore_on_line(entry, index),  # type: ignore[arg-type]
        "fixAll": lambda: fixes.fix_all(entry).source,
        "convert": lambda: fixes.convert(entry).source,
    }
    if action not in compute:
        return None
    try:
        return compute[action]()
    except FixError:
        return None


async def resolve(ls: XlaLensServer, action: types.CodeAction) -> types.CodeAction:
    data = action.data if isinstance(action.data, dict) else {}
    uri, version = data.get("uri"), data.get("version")
    kind, index = data.get("action"), data.get("index")
    if not isinstance(uri, str) or not is_open(ls, uri):
        return action
    entry = ls.cache.get(uri, version)
    if entry is None or version != ls.workspace.get_text_document(uri).version:
        # Listed from an older analysis, or the text moved on since: an edit made from that
        # text would land in the wrong place (a client without versioned edits applies it
        # anyway). Build it on the analysis of the text the editor has now.
        entry = await current_entry(ls, uri)
        if entry is not None and kind in ("fix", "ignore"):
            index = _same_finding(entry, data) if entry.ok else None
            if index is None:
                entry = None
        if entry is None or not entry.ok:
            ls.log_client(f"xla-lens: code action '{action.title}' is stale; ask again")
            return action
    new = await asyncio.to_thread(new_source, entry, str(kind), index)
    if new is None:
        ls.log_client(
            f"xla-lens: '{action.title}' could not be applied to {uri}", types.MessageType.Warning
        )
        return action
    action.edit = workspace_edit(ls, uri, entry.version, entry.source, new, entry.encoding)
    return action


def register(ls: XlaLensServer) -> None:
    @ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=True),
    )
    @ls.guarded("codeAction", default=[])
    async def code_action(
        ls: XlaLensServer, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        uri = params.text_document.uri
        if not is_open(ls, uri):
            return []
        entry = ls.cache.get(uri, ls.workspace.get_text_document(uri).version)
        if entry is None:
            # An analysis is pending: answer at once from the last analysis that parsed, as
            # the diagnostics on screen do (resolving builds the edit on the current text).
            # With no analysis yet, wait for the first one.
            state = ls.cache.docs.get(uri)
            entry = (state.last_good if state else None) or await current_entry(ls, uri)
        if entry is None or not entry.ok:
            return []
        actions = list_actions(entry, params) + run_problem_actions(entry, params)
        if not ls.resolve_supports_edit():
            actions = [await resolve(ls, a) for a in actions]
        return actions

    @ls.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: XlaLensServer, action: types.CodeAction) -> types.CodeAction:
        try:
            return await resolve(ls, action)
        except Exception:
            ls.report("codeAction/resolve")
            return action
