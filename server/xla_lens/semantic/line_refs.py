"""Line numbers a finding's text names, marked so that an edit which only moves lines (a
new comment line) can renumber them instead of re-running every rule.

A rule writes ``line_ref(n)`` for a line *of the analysed file*; ``Finding`` and ``Fix``
render the marks away (users and tests only ever see plain numbers) and keep the marked
text, which ``engine.carry_over`` renumbers. A line of another file (a sibling module) is
written as a plain number: this file's edits do not move it, and a plain number that could
name a moved line stops the carry (the safe side).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

# Private-use code points: never in a message otherwise, and never shown (rendered away).
OPEN = "\ue000"
CLOSE = "\ue001"
_MARKED = re.compile(f"{OPEN}(\\d+){CLOSE}")
# A number that may name a line: not part of a word or code (XLA102, fp16, best_prec1), a
# decimal (0.5, 1e-4) or a keyword value (max_length=512) — our messages write lines as
# "line 12", "lines 3, 5", "(line 7)".
_NUMBER = re.compile(r"(?<![\w.=-])\d+(?![\w.]\d|\w)")


def line_ref(line: int) -> str:
    """``line`` (1-based, of the analysed file) as a marked number."""
    return f"{OPEN}{line}{CLOSE}"


def line_refs(lines: Iterable[int], separator: str = ", ") -> str:
    return separator.join(line_ref(n) for n in lines)


def has_refs(text: str | None) -> bool:
    return text is not None and OPEN in text


def rendered(text: str) -> str:
    """The text a user reads: marked numbers as plain numbers."""
    return _MARKED.sub(r"\1", text) if OPEN in text else text


def plain_numbers(text: str) -> list[int]:
    """The numbers of ``text`` that are not marked line references."""
    return [int(n) for n in _NUMBER.findall(_MARKED.sub(" ", text))]


def renumbered(text: str, new_line: Callable[[int], int | None]) -> str | None:
    """``text`` with each marked line replaced by ``new_line`` of it; None when a marked
    line has no new number."""
    if OPEN not in text:
        return text
    missing = False

    def swap(match: re.Match[str]) -> str:
        nonlocal missing
        line = new_line(int(match.group(1)))
        if line is None:
            missing = True
            return match.group(0)
        return line_ref(line)

    out = _MARKED.sub(swap, text)
    return None if missing else out


__all__ = ["has_refs", "line_ref", "line_refs", "plain_numbers", "rendered", "renumbered"]
