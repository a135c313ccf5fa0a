"""Per-document analysis results, cached by (uri, version).

Code actions, hover and the convert command all read from here instead of re-analysing,
so a request never waits for rules to run twice on the same text.
"""

from __future__ import annotations

import ast
import bisect
import io
import sys
import tokenize
from dataclasses import dataclass, field
from functools import cached_property

from lsprotocol import types

from ..engine.analysis import BOM, Analysis
from ..engine.carry_over import Carried, carried_from
from ..engine.config import Settings
from ..engine.incremental import common_prefix, common_suffix, line_breaks
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
    # Its diagnostics, converted on the analysis thread (None: convert when publishing).
    diagnostics: list[types.Diagnostic] | None = None

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(self.source)

    @cached_property
    def carried(self) -> Carried | None:
        """What a comment-only edit of this text can carry over (engine/carry_over.py)."""
        return carried_from(self.analysis)

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
            for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
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

    def line_map_to(self, version: int | None, newer: str) -> LineMap:
        """``text_line_map`` from this entry's text to the document's text at ``version``,
        kept for that version: the hovers and code actions that arrive while one edit's
        analysis is pending (an editor sends several) compare the texts once."""
        if version is not None and self._line_maps.get(version, (None,))[0] is newer:
            return self._line_maps[version][1]
        mapping = text_line_map(self.source, len(self.lines), newer)
        if version is not None:
            self._line_maps.clear()  # only the newest version's is asked for again
            self._line_maps[version] = (newer, mapping)
        return mapping

    @cached_property
    def _line_maps(self) -> dict[int, tuple[str, LineMap]]:
        return {}

    def commentable(self, line: int) -> bool:
        """Whether ``line`` (0-based) may take a ``# comment``: ``line in commentable_lines``,
        tokenizing only the top-level statements on that line, not the file (a code action
        list on a 10,000-line file must not tokenize all of it). Strings never cross a
        top-level statement's lines, so its lines tokenize alone as they do in the file."""
        model = self.analysis.model
        if model is None:
            return line in self.commentable_lines
        lines = model.lines
        if not 0 <= line < len(lines) or lines[line].rstrip("\r\n").endswith("\\"):
            return False
        block = self._statements_on(line)
        if block is None:  # between statements: a comment or blank line
            return True
        first, last = block
        cached = self._blocked.get(first)
        if cached is None:
            cached = self._blocked[first] = _string_lines("".join(lines[first : last + 1]))
        return cached is not None and line - first not in cached

    @cached_property
    def _blocked(self) -> dict[int, frozenset[int] | None]:
        return {}

    @cached_property
    def _statement_lines(self) -> list[tuple[int, int]]:
        """0-based (first, last) lines of the top-level statements, decorators included,
        statements sharing a line (``a = 1; b = 2``) merged."""
        assert self.analysis.model is not None
        merged: list[tuple[int, int]] = []
        for stmt in self.analysis.model.tree.body:
            first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
            span = (first - 1, (stmt.end_lineno or stmt.lineno) - 1)
            if merged and span[0] <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], span[1]))
            else:
                merged.append(span)
        return merged

    def _statements_on(self, line: int) -> tuple[int, int] | None:
        spans = self._statement_lines
        i = bisect.bisect_right(spans, (line, sys.maxsize)) - 1
        return spans[i] if i >= 0 and spans[i][0] <= line <= spans[i][1] else None

    def findings_in(self, span: Span) -> list[tuple[int, Finding]]:
        """Findings whose span touches ``span`` (inclusive, so a bare cursor counts)."""
        out = []
        for i, f in enumerate(self.analysis.findings):
            if f.span.start <= span.end and span.start <= f.span.end:
                out.append((i, f))
        return out


def _string_lines(text: str) -> frozenset[int] | None:
    """Lines of ``text`` that end inside a string token; None when it does not tokenize."""
    blocked: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                blocked.update(range(tok.start[0] - 1, tok.end[0] - 1))
    except (tokenize.TokenError, SyntaxError):
        return None
    return frozenset(blocked)


@dataclass
class CarriedState:
    """Findings carried over to a document version its analysis has not reached yet, and
    the diagnostics published for them."""

    version: int | None
    carried: Carried
    generation: int
    diagnostics: list[types.Diagnostic]


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


@dataclass(frozen=True)
class LineMap:
    """Which lines of a newer text are unchanged since an older one: the common first
    ``prefix`` lines keep their numbers, the common last ``suffix`` lines move by ``shift``.
    Lines in between (the edited ones) have no counterpart."""

    prefix: int
    suffix: int
    old_count: int
    new_count: int

    @property
    def shift(self) -> int:
        return self.new_count - self.old_count

    def to_old(self, new_line: int) -> int | None:
        if new_line < self.prefix:
            return new_line
        if self.new_count - self.suffix <= new_line < self.new_count:
            return new_line - self.shift
        return None

    def range_to_new(self, old: types.Range) -> types.Range | None:
        """``old`` (a range in the older text) in the newer one, when it lies wholly in the
        unchanged prefix or the unchanged suffix."""
        start, end = old.start.line, old.end.line
        if end < self.prefix:
            return old
        if start >= self.old_count - self.suffix and end < self.old_count:
            return types.Range(
                types.Position(start + self.shift, old.start.character),
                types.Position(end + self.shift, old.end.character),
            )
        return None


def _common_length(a: list[str], b: list[str], from_end: bool) -> int:
    """How many leading (or trailing) lines ``a`` and ``b`` share; bisection on slices, so
    the comparisons run in C (a hover must not walk 100,000 lines in Python)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        same = a[-mid:] == b[-mid:] if from_end else a[:mid] == b[:mid]
        if same:
            lo = mid
        else:
            hi = mid - 1
    return lo


def line_map(old_lines: list[str], new_lines: list[str]) -> LineMap:
    prefix = _common_length(old_lines, new_lines, from_end=False)
    # The suffix may not overlap the prefix in either text.
    room = min(len(old_lines), len(new_lines)) - prefix
    suffix = min(_common_length(old_lines, new_lines, from_end=True), room)
    return LineMap(prefix, suffix, len(old_lines), len(new_lines))


def _line_count(text: str) -> int:
    """``len(split_lines(text))`` without splitting."""
    return line_breaks(text) + (1 if text and text[-1] not in "\r\n" else 0)


def text_line_map(old: str, old_count: int, new: str) -> LineMap:
    """A ``LineMap`` from the texts themselves (``old_count`` = lines of ``old``): the
    common prefix and suffix found by comparing strings in C, lines counted in C, so a
    hover on a 10,000-line file does not split and compare it line by line. Lines it
    maps are equal in both texts; it may map fewer than ``line_map`` (never others)."""
    start = common_prefix(old, new)
    tail = common_suffix(old, new, min(len(old), len(new)) - start)
    # Lines wholly before the first change; one less when the edit may turn the "\r"
    # ending the last of them into "\r\n".
    prefix = line_breaks(old, 0, start)
    if prefix and start and old[start - 1] == "\r":
        prefix -= 1
    # Lines wholly inside the common tail that start after a line end inside it.
    old_end = len(old) - tail
    suffix = max(_line_count(old[old_end:]) - 1, 0) if tail else 0
    new_count = _line_count(new)
    room = min(old_count, new_count) - prefix
    return LineMap(prefix, max(min(suffix, room), 0), old_count, new_count)


def parses(source: str) -> bool:
    try:
        ast.parse(source[1:] if source.startswith(BOM) else source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
