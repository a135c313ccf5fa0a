"""Rule pages: one Markdown file per rule beside its module (``xla101_cuda_device.md``).

A page is the rule's documentation in one place; the README table, ``docs/rules/XLAnnn.md``,
``xla-lens rules XLAnnn``, the hover text and the diagnostics' link all come from it.
Its fixed shape (a test holds every page to it)::

    # XLA101 cuda-device

    Short form: what the rule reports and what it does about it (one paragraph).

    ## Why it matters on XLA
    ## Example
    ## Use instead
    ## Fix safety      (its first paragraph is the one-line summary shown on hover)
    ## References
"""

from __future__ import annotations

import re
from importlib import resources

SECTIONS = ("Why it matters on XLA", "Example", "Use instead", "Fix safety", "References")

_HEADING = re.compile(r"^## (.+?)\s*$", re.M)


def read_page(module_stem: str) -> str:
    """The page beside ``<module_stem>.py``, or "" when the rule has none (a test fails then)."""
    page = resources.files(__package__).joinpath(f"{module_stem}.md")
    try:
        return page.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def title(page: str) -> str:
    """The ``# XLAnnn name`` line's text, or "" when the page does not start with one."""
    first = page.lstrip().split("\n", 1)[0]
    return first[2:].strip() if first.startswith("# ") else ""


def intro(page: str) -> str:
    """The short form: the first paragraph after the title, joined onto one line."""
    match = _HEADING.search(page)
    head = page[: match.start()] if match else page
    paragraphs = [p for p in _paragraphs(head) if not p.startswith("# ")]
    return " ".join(paragraphs[0].split()) if paragraphs else ""


def sections(page: str) -> dict[str, str]:
    """``## Heading`` → the section's text (without the heading), in page order."""
    found = list(_HEADING.finditer(page))
    out = {}
    for i, match in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(page)
        out[match.group(1)] = page[match.end() : end].strip()
    return out


def first_paragraph(text: str) -> str:
    paragraphs = _paragraphs(text)
    return " ".join(paragraphs[0].split()) if paragraphs else ""
