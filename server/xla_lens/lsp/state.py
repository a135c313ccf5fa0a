"""Per-document analysis results, cached by (uri, version).

Code actions, hover and the convert command all read from here instead of re-analysing,
so a request never waits for rules to run twice on the same text.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field
from functools import cached_property

from lsprotocol import types

from ..engine.analysis import BOM, Analysis
from ..engine.config import Settings
from ..rules.base import Finding, Pos, Span, Target
from .positions import UTF16, from_position, split_lines, to_range


@dataclass
class Entry:
    uri: str
    version: int | None
    source: str
    analysis: Analysis
    settings: Settings
    target: Target
    encoding: str = UTF16
    # The settings generation it was analysed under (``XlaLensServer.generation``).
    generation: int = 0

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(self.source)

    @property
    def ok(self) -> bool:
        return self.analysis.ok

    @property
    def _bom(self) -> int:
        # The engine analyses the text without its BOM; the editor's line 0 still has it.
        return 1 if self.source.startswith(BOM) else 0

    def range(self, span: Span) -> types.Range:
        if self._bom:
            span = Span(self._shift(span.start, 1), self._shift(span.end, 1))
        return to_range(self.lines, span, self.encoding)

    def pos(self, position: types.Position) -> Pos:
        """A client position as an engine position (code points, BOM removed)."""
        p = from_position(self.lines, position, self.encoding)
        return self._shift(p, -1) if self._bom else p

    @staticmethod
    def _shift(p: Pos, by: int) -> Pos:
        return Pos(p.line, max(p.col + by, 0)) if p.line == 0 else p

    @cached_property
    def commentable_lines(self) -> frozenset[int]:
        """0-based lines whose end may take a ``# comment`` (not inside a string, not
        after a backslash continuation)."""
        text = self.source[1:] if self.source.startswith(BOM) else self.source
        lines = split_lines(text)
        blocked: set[int] = set()
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.STRING or tok.type == getattr(
                    tokenize, "FSTRING_MIDDLE", -1
                ):
                    blocked.update(range(tok.start[0] - 1, tok.end[0] - 1))
        except (tokenize.TokenError, SyntaxError):
            return frozenset()
        ok = set()
        for i, line in enumerate(lines):
            if i not in blocked and not line.rstrip("\r\n").endswith("\\"):
                ok.add(i)
        return frozenset(ok)

    def findings_in(self, span: Span) -> list[tuple[int, Finding]]:
        """Findings whose span touches ``span`` (inclusive, so a bare cursor counts)."""
        out = []
        for i, f in enumerate(self.analysis.findings):
            if f.span.start <= span.end and span.start <= f.span.end:
                out.append((i, f))
        return out


@dataclass
class DocumentState:
    current: Entry | None = None
    # The newest entry that parsed: its diagnostics stay up while the text is broken.
    last_good: Entry | None = None


@dataclass
class AnalysisCache:
    docs: dict[str, DocumentState] = field(default_factory=dict)

    def store(self, entry: Entry) -> None:
        state = self.docs.setdefault(entry.uri, DocumentState())
        state.current = entry
        if entry.ok:
            state.last_good = entry

    def get(
        self, uri: str, version: int | None = None, generation: int | None = None
    ) -> Entry | None:
        """The entry for ``uri`` at ``version`` and settings ``generation`` (any when None)."""
        state = self.docs.get(uri)
        if state is None or state.current is None:
            return None
        if version is not None and state.current.version != version:
            return None
        if generation is not None and state.current.generation != generation:
            return None
        return state.current

    def drop(self, uri: str) -> None:
        self.docs.pop(uri, None)


def parses(source: str) -> bool:
    try:
        ast.parse(source[1:] if source.startswith(BOM) else source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
