"""The rule registry: every module ``xlaNNN_<name>.py`` in this package defines ``RULE``.

Discovery by file name keeps "a new rule is one new file plus its test" true.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache

from . import __path__ as _rules_path
from .base import Rule

_RULE_MODULE = re.compile(r"^xla\d{3}_\w+$")


@cache
def all_rules() -> tuple[Rule, ...]:
    rules = []
    for info in pkgutil.iter_modules(_rules_path):
        if _RULE_MODULE.match(info.name):
            module = importlib.import_module(f"{__package__}.{info.name}")
            rules.append(module.RULE)
    codes = [r.code for r in rules]
    duplicates = {c for c in codes if codes.count(c) > 1}
    if duplicates:
        raise RuntimeError(f"duplicate rule codes: {sorted(duplicates)}")
    return tuple(sorted(rules, key=lambda r: r.code))


def rules_by_code() -> dict[str, Rule]:
    return {r.code: r for r in all_rules()}


def get_rule(code: str) -> Rule | None:
    return rules_by_code().get(code)
