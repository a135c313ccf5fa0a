"""Document lifecycle: analyse on open/change (debounced)/save, publish, clear on close,
and re-analyse everything when settings or workspace folders change."""

from __future__ import annotations

import asyncio
import functools
import os
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from ..engine.analysis import analyze
from ..semantic.model import ScriptModel
from . import memory
from .carried import already_published, publish_carried
from .core import XlaLensServer
from .diagnostics import diagnostics_for
from .settings import Resolved, resolve_blocking
from .state import Entry

PYTHON_SUFFIXES = (".py", ".pyw", ".pyi")
TURNS_BEFORE_ANALYSIS = 3
# After findings were carried over a comment edit: how long the typing must pause before
# the new text is analysed (for its fixes and hovers; its diagnostics are already up).
CARRIED_ANALYSIS_DELAY_S = 0.75
STATS = "xla-lens/stats"


def _is_python(uri: str, language_id: str | None) -> bool:
    return language_id == "python" or uri.split("?")[0].endswith(PYTHON_SUFFIXES)


def _path(uri: str) -> str:
    return (to_fs_path(uri) if uri.startswith("file:") else None) or uri


def is_open(ls: XlaLensServer, uri: str) -> bool:
    return uri in ls.workspace.text_documents


async def analyse(ls: XlaLensServer, uri: str, force: bool = False) -> Entry | None:
    """The analysis of the document's current text; None when closed or superseded.

    One analysis per (version, settings generation): a caller arriving while it runs (a
    hover, the debounced refresh, Convert) waits for that one; the cached one is reused
    unless ``force``.
    """
    if not is_open(ls, uri):
        return None
    doc = ls.workspace.get_text_document(uri)
    key = (doc.version, ls.generation)
    running = ls.inflight.get(uri)
    if running is not None and running[0] == key:
        return await asyncio.shield(running[1])
    if running is not None and not running[1].done():
        # An older text is still being analysed (a thread cannot be stopped): let it
        # finish before starting on the new text, so two analyses of one document never
        # share the CPU and the newest one is not slowed down by the stale one.
        await asyncio.wait([running[1]])
        return await analyse(ls, uri, force)
    if not force:
        cached = ls.cache.get(uri, doc.version, ls.generation)
        if cached is not None:
            return cached
    future = asyncio.ensure_future(_analyse_now(ls, uri, doc.version, doc.source, ls.generation))
    ls.inflight[uri] = (key, future)
    future.add_done_callback(functools.partial(_forget, ls, uri))
    # Shielded: a cancelled hover must not cancel the analysis others wait for.
    return await asyncio.shield(future)


def _forget(ls: XlaLensServer, uri: str, future: asyncio.Future[Any]) -> None:
    running = ls.inflight.get(uri)
    if running is not None and running[1] is future:
        del ls.inflight[uri]
    if not future.cancelled():
        future.exception()  # retrieved: every waiter may have gone


async def _analyse_now(
    ls: XlaLensServer, uri: str, version: int | None, source: str, generation: int
) -> Entry | None:
    editor = await ls.settings.editor_for(uri, ls.folders())
    previous, encoding = _previous_model(ls, uri), ls.encoding
    ls.analyses += 1

    def work() -> tuple[Entry, Resolved]:
        # One hop to the worker thread for settings, analysis and diagnostics: each hop
        # back and forth costs the event loop a wake-up and a wait for the GIL.
        with memory.collector_paused_for_analysis():
            resolved = resolve_blocking(uri, editor)
            analysis = analyze(source, _path(uri), resolved.settings, resolved.target, previous)
            entry = Entry(
                uri, version, source, analysis, resolved.settings, resolved.target, encoding
            )
            entry.generation = generation
            entry.diagnostics = diagnostics_for(entry)
        return entry, resolved

    entry, resolved = await asyncio.to_thread(work)
    for problem in ls.settings.fresh(resolved).problems:
        ls.show_client(problem)
    if not is_open(ls, uri) or ls.workspace.get_text_document(uri).version != version:
        return None
    ls.cache.store(entry)
    ls.idle_collector.analysed()
    for code, tb in entry.analysis.rule_errors:
        ls.log_client(f"xla-lens: rule {code} crashed on {uri}:\n{tb}", types.MessageType.Error)
    return entry


def _previous_model(ls: XlaLensServer, uri: str) -> ScriptModel | None:
    """The newest model of this document, for the parser to re-parse only what an edit
    changed (any text of the document will do: the result is a full parse's either way)."""
    state = ls.cache.docs.get(uri)
    entry = state.last_good if state is not None else None
    return entry.analysis.model if entry is not None else None


async def current_entry(ls: XlaLensServer, uri: str) -> Entry | None:
    """The analysis of the text the editor has now: cached, pending, or started now."""
    return await analyse(ls, uri)


def publish(ls: XlaLensServer, entry: Entry) -> None:
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=entry.uri,
            diagnostics=entry.diagnostics
            if entry.diagnostics is not None
            else diagnostics_for(entry),
            version=entry.version,
        )
    )


async def refresh(
    ls: XlaLensServer, uri: str, delay: float = 0.0, force: bool = False, carry: bool = False
) -> None:
    # An editor sends requests right behind a keystroke (code actions at the cursor, a
    # hover): a few turns of the event loop first let those that have arrived be answered
    # from the last analysis before this one takes the GIL (no waiting: each turn only runs
    # what is ready).
    for _ in range(TURNS_BEFORE_ANALYSIS):
        await asyncio.sleep(0)
    if carry:
        # A comment-only edit: the findings on screen, renumbered, at once. The analysis
        # of the new text is then only needed for fixes and hovers (which start it when
        # asked) or once the typing stops: a burst of comment edits runs no rule.
        ls.deferred.discard(uri)
        if is_open(ls, uri) and publish_carried(ls, uri):
            ls.deferred.add(uri)
            delay = max(delay, CARRIED_ANALYSIS_DELAY_S)
    if delay:
        await asyncio.sleep(delay)
    ls.deferred.discard(uri)
    entry = await analyse(ls, uri, force)
    if entry is None:
        return
    if not entry.ok:
        # Mid-edit syntax errors are the Python extension's job; keep the last good
        # diagnostics on screen rather than flashing them away.
        return
    if not already_published(ls, entry):
        publish(ls, entry)
    for listener in list(ls.analysis_listeners):
        try:
            listener(ls, entry)
        except Exception:
            ls.report("analysis listener")


def change_delay(ls: XlaLensServer, uri: str) -> float:
    """How long to wait before analysing after a keystroke. An edit that finds the server
    idle for this document (nothing scheduled, nothing being analysed) is analysed at once;
    one that arrives while an analysis is scheduled or running is part of a burst: it waits
    out the debounce window (each newer edit restarts it) and then for the running analysis,
    so the burst costs one more analysis, of its last text."""
    busy = (uri in ls.pending and uri not in ls.deferred) or uri in ls.inflight
    return ls.debounce_s if busy else 0.0


def schedule(
    ls: XlaLensServer, uri: str, delay: float = 0.0, force: bool = False, carry: bool = False
) -> None:
    """(Re)start the analysis of ``uri``; a newer change cancels the pending one. With
    ``carry``, first publish the last findings carried over the edit when it only changed
    comments (then the analysis waits for a pause in the typing)."""
    old = ls.pending.pop(uri, None)
    if old is not None and not old.done():
        old.cancel()
    task = ls.spawn(refresh(ls, uri, delay, force, carry), f"analysing {uri}")
    ls.pending[uri] = task
    task.add_done_callback(
        lambda t: ls.pending.pop(uri, None) if ls.pending.get(uri) is t else None
    )


def schedule_all(ls: XlaLensServer) -> None:
    """Re-analyse every open document: settings may have changed."""
    ls.generation += 1
    for uri, doc in list(ls.workspace.text_documents.items()):
        if _is_python(uri, doc.language_id):
            schedule(ls, uri)


def stats(ls: XlaLensServer) -> dict[str, Any]:
    """Counters for diagnosing the server (and for tests): analyses run, documents held,
    resident memory now and at its peak (KiB)."""
    memory: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    memory[line[:5]] = int(line.split()[1])
    except OSError:
        pass
    return {
        "analyses": ls.analyses,
        "carried_publishes": ls.carried_publishes,
        "open_documents": len(ls.workspace.text_documents),
        "cached_documents": len(ls.cache.docs),
        "pending": len(ls.pending) + len(ls.inflight),
        "rss_kb": memory.get("VmRSS"),
        "peak_rss_kb": memory.get("VmHWM"),
        "pid": os.getpid(),
    }


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
            schedule(ls, uri, change_delay(ls, uri), carry=True)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @ls.guarded("didSave")
    def did_save(ls: XlaLensServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("/pyproject.toml"):
            ls.settings.invalidate()
            schedule_all(ls)
        elif is_open(ls, uri) and _is_python(uri, ls.workspace.get_text_document(uri).language_id):
            schedule(ls, uri, force=True)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @ls.guarded("didClose")
    def did_close(ls: XlaLensServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.inflight.pop(uri, None)
        ls.carried.pop(uri, None)
        ls.deferred.discard(uri)
        ls.cache.drop(uri)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )
        # Hand a large file's memory back now, not at some later collection.
        memory.release()

    @ls.feature(STATS)
    def server_stats(ls: XlaLensServer, params: Any) -> dict[str, Any]:
        return stats(ls)

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
