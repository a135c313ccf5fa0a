"""Source positions as every layer speaks them: 0-based lines, code-point columns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Pos:
    """A position: 0-based line, 0-based column in Unicode code points."""

    line: int
    col: int


@dataclass(frozen=True, order=True)
class Span:
    start: Pos
    end: Pos

    def contains(self, other: Span) -> bool:
        return self.start <= other.start and other.end <= self.end
