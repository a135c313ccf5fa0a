"""The server's copy of each open document, kept with LSP's line semantics.

pygls splits a document with ``str.splitlines``, which also breaks lines at form feeds,
VT, FS/GS/RS, NEL, U+2028 and U+2029; LSP ends lines only at ``\\n``, ``\\r\\n`` and ``\\r``.
A comment holding one of those characters, then any incremental change below it, and
pygls applied the change lines away from where the editor made it: the server's text
drifted from the editor's and every later fix landed in the wrong place. Here a change's
range is turned into code-point offsets with the same line model the diagnostics and the
Convert edits use (``positions``), and spliced into the text.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

from .positions import UTF16, offset_at, split_lines


class LspTextDocument(TextDocument):
    @property
    def encoding(self) -> str:
        return str(self.position_codec.encoding or UTF16)

    @property
    def lines(self) -> Sequence[str]:
        return tuple(split_lines(self.source))

    def offset_at_position(self, client_position: types.Position) -> int:
        return offset_at(self.source, client_position, self.encoding)

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        source = self.source
        start = offset_at(source, change.range.start, self.encoding)
        end = offset_at(source, change.range.end, self.encoding)
        if end < start:  # a reversed range names the same text
            start, end = end, start
        self._source = source[:start] + change.text + source[end:]


class LspWorkspace(Workspace):
    """pygls' workspace, creating every text document (notebook cells included) with LSP
    line semantics."""

    @classmethod
    def like(cls, other: Workspace) -> LspWorkspace:
        """A fresh workspace with ``other``'s root, sync kind, folders and encoding."""
        return cls(
            other.root_uri,
            other._sync_kind,
            list(other.folders.values()),
            other.position_encoding,
        )

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LspTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self.position_codec,
        )
