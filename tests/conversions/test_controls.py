"""Already-XLA control scripts (controls/*.py, analysed, never run) get no conversion or
distributed findings. A strict xfail marks a control a rule still fires on: when the rule's
owner fixes it, the test XPASSes, fails, and tells them to remove the mark."""

from __future__ import annotations

import pytest
from xla_lens.engine import analyze
from xla_lens.rules.base import Category
from xla_lens.rules.registry import rules_by_code

from .harness import CONTROLS

CONVERSION = {Category.CONVERSION, Category.DISTRIBUTED}

# Control -> why a rule still fires on it (remove the entry once the rule is fixed).
STILL_FLAGGED: dict[str, str] = {}


def _params() -> list:
    params = []
    for path in sorted(CONTROLS.glob("*.py")):
        marks = []
        if path.name in STILL_FLAGGED:
            marks.append(pytest.mark.xfail(strict=True, reason=STILL_FLAGGED[path.name]))
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


def test_there_are_controls():
    assert len(list(CONTROLS.glob("*.py"))) >= 7


@pytest.mark.parametrize("path", _params())
def test_control_gets_no_conversion_findings(path):
    analysis = analyze(path.read_text(), str(path), target="modern")
    assert analysis.ok and not analysis.rule_errors, analysis.rule_errors
    rules = rules_by_code()
    flagged = [
        (f.code, f.span.start.line + 1, f.message)
        for f in analysis.findings
        if rules[f.code].category in CONVERSION
    ]
    assert flagged == []
