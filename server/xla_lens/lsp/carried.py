"""Diagnostics at once after a comment-only edit: the last findings carried over to the
new text (engine/carry_over.py proves them equal to what the analysis of that text gives),
published while that analysis runs; its own publish is skipped when it says the same."""

from __future__ import annotations

from lsprotocol import types

from ..engine.analysis import Analysis
from ..engine.carry_over import Carried, carry
from .core import XlaLensServer
from .diagnostics import diagnostics_for
from .state import CarriedState, Entry


def _base(ls: XlaLensServer, uri: str) -> tuple[Entry, Carried] | None:
    """The newest findings of this document under the current settings: its analysis,
    or what was carried past it."""
    entry = ls.cache.get(uri, generation=ls.generation)
    if entry is None or not entry.ok:
        return None
    state = ls.carried.get(uri)
    if (
        state is not None
        and state.generation == ls.generation
        and _newer(state.version, entry.version)
    ):
        return entry, state.carried
    carried = entry.carried
    return (entry, carried) if carried is not None else None


def _newer(a: int | None, b: int | None) -> bool:
    return a is not None and b is not None and a > b


def publish_carried(ls: XlaLensServer, uri: str) -> bool:
    """Publish the findings carried to the document's current text, when they can be;
    whether they were."""
    base = _base(ls, uri)
    doc = ls.workspace.get_text_document(uri)
    found = carry(base[1], doc.source) if base is not None else None
    if base is None or found is None:
        ls.carried.pop(uri, None)
        return False
    entry = base[0]
    shown = Entry(
        uri,
        doc.version,
        doc.source,
        Analysis(entry.analysis.path, doc.source, entry.target, findings=list(found.findings)),
        entry.settings,
        entry.target,
        entry.encoding,
    )
    diagnostics = diagnostics_for(shown)
    ls.carried[uri] = CarriedState(doc.version, found, ls.generation, diagnostics)
    ls.carried_publishes += 1
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=doc.version)
    )
    return True


def already_published(ls: XlaLensServer, entry: Entry) -> bool:
    """Whether the carried diagnostics on screen for this entry's version are its own."""
    state = ls.carried.get(entry.uri)
    if state is None or state.version != entry.version or state.generation != entry.generation:
        return False
    return state.diagnostics == (entry.diagnostics or diagnostics_for(entry))


__all__ = ["already_published", "publish_carried"]
