"""Document lifecycle: analyse on open/change (debounced)/save, publish, clear on close,
and re-analyse everything when settings or workspace folders change."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from ..engine.analysis import analyze
from .core import XlaLensServer
from .diagnostics import diagnostics_for
from .state import Entry

PYTHON_SUFFIXES = (".py", ".pyw", ".pyi")


def _is_python(uri: str, language_id: str | None) -> bool:
    return language_id == "python" or uri.split("?")[0].endswith(PYTHON_SUFFIXES)


def _path(uri: str) -> str:
    return (to_fs_path(uri) if uri.startswith("file:") else None) or uri


def is_open(ls: XlaLensServer, uri: str) -> bool:
    return uri in ls.workspace.text_documents


async def analyse(ls: XlaLensServer, uri: str) -> Entry | None:
    """Analyse the document's current text and cache it; None when closed or superseded."""
    if not is_open(ls, uri):
        return None
    doc = ls.workspace.get_text_document(uri)
    version, source = doc.version, doc.source
    resolved = await ls.settings.for_document(uri, ls.folders())
    for problem in resolved.problems:
        ls.show_client(problem)
    analysis = await asyncio.to_thread(
        analyze, source, _path(uri), resolved.settings, resolved.target
    )
    if not is_open(ls, uri) or ls.workspace.get_text_document(uri).version != version:
        return None
    entry = Entry(uri, version, source, analysis, resolved.settings, resolved.target, ls.encoding)
    ls.cache.store(entry)
    for code, tb in analysis.rule_errors:
        ls.log_client(f"xla-lens: rule {code} crashed on {uri}:\n{tb}", types.MessageType.Error)
    return entry


async def current_entry(ls: XlaLensServer, uri: str) -> Entry | None:
    """The cached analysis of the text the editor has now, analysing it if needed."""
    if not is_open(ls, uri):
        return None
    version = ls.workspace.get_text_document(uri).version
    return ls.cache.get(uri, version) or await analyse(ls, uri)


def publish(ls: XlaLensServer, entry: Entry) -> None:
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=entry.uri, diagnostics=diagnostics_for(entry), version=entry.version
        )
    )


async def refresh(ls: XlaLensServer, uri: str, delay: float = 0.0) -> None:
    if delay:
        await asyncio.sleep(delay)
    entry = await analyse(ls, uri)
    if entry is None:
        return
    if not entry.ok:
        # Mid-edit syntax errors are the Python extension's job; keep the last good
        # diagnostics on screen rather than flashing them away.
        return
    publish(ls, entry)
    for listener in list(ls.analysis_listeners):
        try:
            listener(ls, entry)
        except Exception:
            ls.report("analysis listener")


def schedule(ls: XlaLensServer, uri: str, delay: float = 0.0) -> None:
    """(Re)start the analysis of ``uri``; a newer change cancels the pending one."""
    old = ls.pending.pop(uri, None)
    if old is not None and not old.done():
        old.cancel()
    task = ls.spawn(refresh(ls, uri, delay), f"analysing {uri}")
    ls.pending[uri] = task
    task.add_done_callback(
        lambda t: ls.pending.pop(uri, None) if ls.pending.get(uri) is t else None
    )


def schedule_all(ls: XlaLensServer) -> None:
    for uri, doc in list(ls.workspace.text_documents.items()):
        if _is_python(uri, doc.language_id):
            schedule(ls, uri)


def _options(params: types.InitializeParams) -> dict[str, Any]:
    opts = params.initialization_options
    return opts if isinstance(opts, dict) else {}


def register(ls: XlaLensServer) -> None:
    @ls.feature(types.INITIALIZE)
    @ls.guarded("initialize")
    def initialize(ls: XlaLensServer, params: types.InitializeParams) -> None:
        opts = _options(params)
        if isinstance(opts.get("debounceMs"), int | float):
            ls.debounce_s = max(float(opts["debounceMs"]), 0.0) / 1000.0
        if "settings" in opts:
            ls.settings.invalidate({"xla-lens": opts["settings"]})

    @ls.feature(types.INITIALIZED)
    @ls.guarded("initialized")
    async def initialized(ls: XlaLensServer, params: types.InitializedParams) -> None:
        if not ls.client_supports("workspace.did_change_configuration.dynamic_registration"):
            return
        # Pull-model clients only send didChangeConfiguration once asked to.
        registration = types.Registration(
            id="xla-lens-config", method=types.WORKSPACE_DID_CHANGE_CONFIGURATION
        )
        try:
            await ls.client_register_capability_async(
                types.RegistrationParams(registrations=[registration])
            )
        except Exception as exc:  # the client may still push settings changes
            ls.log_client(f"xla-lens: could not register for configuration changes: {exc}")

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @ls.guarded("didOpen")
    def did_open(ls: XlaLensServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        if _is_python(doc.uri, doc.language_id):
            schedule(ls, doc.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @ls.guarded("didChange")
    def did_change(ls: XlaLensServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if _is_python(uri, ls.workspace.get_text_document(uri).language_id):
            schedule(ls, uri, ls.debounce_s)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @ls.guarded("didSave")
    def did_save(ls: XlaLensServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("/pyproject.toml"):
            ls.settings.invalidate()
            schedule_all(ls)
        elif is_open(ls, uri) and _is_python(uri, ls.workspace.get_text_document(uri).language_id):
            schedule(ls, uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @ls.guarded("didClose")
    def did_close(ls: XlaLensServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.cache.drop(uri)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @ls.guarded("didChangeConfiguration")
    def did_change_configuration(
        ls: XlaLensServer, params: types.DidChangeConfigurationParams
    ) -> None:
        ls.settings.invalidate(params.settings)
        schedule_all(ls)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    @ls.guarded("didChangeWorkspaceFolders")
    def did_change_folders(
        ls: XlaLensServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        ls.settings.invalidate()
        schedule_all(ls)
