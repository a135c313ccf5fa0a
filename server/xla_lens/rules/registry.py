"""The rule registry: every module ``xlaNNN_<name>.py`` in this package defines ``RULE``.

Discovery by file name keeps "a new rule is one new file plus its test" true (plus its page,
``xlaNNN_<name>.md`` beside it, attached here as ``Rule.doc``; see ``pages``).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import replace
from functools import cache

from . import __path__ as _rules_path
from . import pages
from .base import Rule

_RULE_MODULE = re.compile(r"^xla\d{3}_\w+$")


@cache
def all_rules() -> tuple[Rule, ...]:
    rules = []
    for info in pkgutil.iter_modules(_rules_path):
        if _RULE_MODULE.match(info.name):
            module = importlib.import_module(f"{__package__}.{info.name}")
            rule = module.RULE
            rules.append(replace(rule, doc=pages.read_page(info.name) or rule.doc))
    codes = [r.code for r in rules]
    duplicates = {c for c in codes if codes.count(c) > 1}
    if duplicates:
        raise RuntimeError(f"duplicate rule codes: {sorted(duplicates)}")
    return tuple(sorted(rules, key=lambda r: r.code))


def rules_by_code() -> dict[str, Rule]:
    return {r.code: r for r in all_rules()}


def get_rule(code: str) -> Rule | None:
    return rules_by_code().get(code)


def short_doc(rule: Rule) -> str:
    """The page's short form (its first paragraph); the summary when the rule has no page."""
    return pages.intro(rule.doc) or rule.summary + "."


def fix_safety(rule: Rule) -> str:
    """The first paragraph of the page's "Fix safety" section ("" without a page)."""
    return pages.first_paragraph(pages.sections(rule.doc).get("Fix safety", ""))
