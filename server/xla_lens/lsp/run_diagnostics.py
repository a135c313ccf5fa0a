"""Run problems as diagnostics (source ``xla-lens run``), published together with the static
ones: publishDiagnostics replaces a document's whole set, so each publication carries both.

The static publisher (documents.refresh) calls ``ls.analysis_listeners`` right after it
publishes; the listener here re-publishes the merged set when the document has run results.
Both go out in the same loop turn, so the client never renders the static-only set.
"""

from __future__ import annotations

from lsprotocol import types

from ..runner.events import Problem
from .core import XlaLensServer
from .diagnostics import diagnostics_for
from .positions import split_lines, units_of
from .run_results import LineResult, RunStore
from .state import Entry

SOURCE = "xla-lens run"

SEVERITY = {
    "recompilation": types.DiagnosticSeverity.Warning,
    "cpu-fallback": types.DiagnosticSeverity.Warning,
    "host-read": types.DiagnosticSeverity.Information,
    "compile-bound": types.DiagnosticSeverity.Information,
    "crash": types.DiagnosticSeverity.Error,
    "no-xla": types.DiagnosticSeverity.Warning,
    "hang": types.DiagnosticSeverity.Error,
}


def _line_range(line: str, number: int, encoding: str) -> types.Range:
    text = line.rstrip("\r\n")
    start = len(text) - len(text.lstrip())
    return types.Range(
        start=types.Position(line=number, character=units_of(text[:start], encoding)),
        end=types.Position(line=number, character=units_of(text, encoding)),
    )


def _diagnostic(p: Problem, rng: types.Range) -> types.Diagnostic:
    # Optional fields of an explained recompilation (absent from older runners).
    doc = getattr(p, "doc_url", None)
    return types.Diagnostic(
        range=rng,
        message=p.message,
        severity=SEVERITY.get(p.kind, types.DiagnosticSeverity.Information),
        code=p.kind,
        code_description=types.CodeDescription(href=doc) if doc else None,
        source=SOURCE,
    )


def run_diagnostics(store: RunStore, uri: str, text: str, encoding: str) -> list[types.Diagnostic]:
    run = store.get(uri)
    if run is None:
        return []
    lines = split_lines(text)
    out = []
    mapped: dict[int, LineResult] = run.mapped(text)
    for number, result in sorted(mapped.items()):
        if number < len(lines):
            rng = _line_range(lines[number], number, encoding)
            out.extend(_diagnostic(p, rng) for p in result.problems)
    return out


def publish_merged(ls: XlaLensServer, store: RunStore, uri: str) -> None:
    """Publish static + run diagnostics for ``uri`` from the newest analysis that parsed."""
    state = ls.cache.docs.get(uri)
    entry = state.last_good if state else None
    if entry is not None:
        static, text, version = diagnostics_for(entry), entry.source, entry.version
    else:  # not open: the run's own view of the file is all there is
        run = store.get(uri)
        static, text, version = [], "\n".join(run.anchor if run else []), None
    diagnostics = static + run_diagnostics(store, uri, text, ls.encoding)
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
    )


def register(ls: XlaLensServer, store: RunStore) -> None:
    def after_analysis(ls: XlaLensServer, entry: Entry) -> None:
        # Only documents with run diagnostics need the second publication.
        if run_diagnostics(store, entry.uri, entry.source, ls.encoding):
            publish_merged(ls, store, entry.uri)

    ls.analysis_listeners.append(after_analysis)
