"""The new document text for each kind of code action, computed with the engine.

Pure functions of a cached ``Entry``: they never touch the client, so the resolve step
can run them in a worker thread.
"""

from __future__ import annotations

import re

from ..engine.fixing import FixOutcome, apply_fix, fix_source
from ..rules.base import Category, Finding
from ..rules.registry import get_rule
from .positions import split_lines
from .state import Entry, parses

# What "Convert to PyTorch/XLA" applies: everything but the performance advice.
CONVERSION_CATEGORIES = frozenset(
    {
        Category.CONVERSION,
        Category.DISTRIBUTED,
        Category.TRAINER,
        Category.MODERNISATION,
        Category.CORRECTNESS,
    }
)
_IGNORE = re.compile(r"(#\s*xla-lens:\s*ignore\[)([^\]]*)(\])")


def is_conversion(finding: Finding) -> bool:
    rule = get_rule(finding.code)
    return rule is not None and rule.category in CONVERSION_CATEGORIES


def quick_fix(entry: Entry, index: int) -> str:
    return apply_fix(entry.source, entry.analysis.findings[index])


def fix_all(entry: Entry) -> FixOutcome:
    return fix_source(entry.source, entry.analysis.path, entry.settings, entry.target)


def convert(entry: Entry) -> FixOutcome:
    return fix_source(
        entry.source, entry.analysis.path, entry.settings, entry.target, accept=is_conversion
    )


def ignore_line_of(entry: Entry, finding: Finding) -> int | None:
    """The line that can carry the suppression comment (start line, else end line)."""
    for line in (finding.span.start.line, finding.span.end.line):
        if entry.commentable(line):
            return line
    return None


def ignore_on_line(entry: Entry, index: int) -> str | None:
    """The source with ``# xla-lens: ignore[CODE]`` on the finding's line, or None."""
    finding = entry.analysis.findings[index]
    line_no = ignore_line_of(entry, finding)
    if line_no is None:
        return None
    lines = split_lines(entry.source)
    if line_no >= len(lines):
        return None
    line = lines[line_no]
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    existing = _IGNORE.search(body)
    if existing:
        codes = [c.strip() for c in existing.group(2).split(",") if c.strip()]
        codes.append(finding.code)
        body = body[: existing.start(2)] + ", ".join(codes) + body[existing.end(2) :]
    else:
        body = f"{body.rstrip()}  # xla-lens: ignore[{finding.code}]"
    lines[line_no] = body + ending
    new = "".join(lines)
    return new if parses(new) else None
