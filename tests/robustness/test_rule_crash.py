"""A rule that crashes must not silence the others, in the engine and in the CLI."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import xla_lens.engine.analysis as analysis
from xla_lens.engine import analyze, fix_source
from xla_lens.rules.base import Category, Finding, Pos, Rule, RuleContext, Severity, Span
from xla_lens.rules.registry import all_rules
from xla_lens.semantic.model import ScriptModel

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "mnist_amp.py"


def _raises(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    # A generator that has already produced a finding when it fails: that half result
    # must be dropped with the rule, not reported as if the rule had finished.
    yield Finding("XLA998", "half a result", Span(Pos(0, 0), Pos(0, 1)), Severity.ERROR)
    raise KeyError("deliberately broken rule")


def _raises_at_once(model: ScriptModel, ctx: RuleContext) -> list[Finding]:
    return [model.tree.body[10_000]]  # type: ignore[list-item]  # IndexError


BROKEN = (
    Rule("XLA998", "broken-midway", Category.CONVERSION, "breaks", Severity.ERROR, _raises, False),
    Rule(
        "XLA999",
        "broken-at-once",
        Category.CONVERSION,
        "breaks",
        Severity.ERROR,
        _raises_at_once,
        False,
    ),
)


@pytest.fixture
def broken_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    # analysis.py binds all_rules at import, so that is the name to replace; the broken
    # rules go first, so a crash that stopped the loop would lose every real rule.
    real = all_rules()
    monkeypatch.setattr(analysis, "all_rules", lambda: (*BROKEN, *real))


def test_real_rules_still_report_when_another_rule_crashes(broken_rules: None) -> None:
    source = SAMPLE.read_text(encoding="utf-8")
    result = analyze(source, str(SAMPLE), target="modern")
    assert [code for code, _ in result.rule_errors] == ["XLA998", "XLA999"]
    assert "KeyError: 'deliberately broken rule'" in result.rule_errors[0][1]
    assert "IndexError" in result.rule_errors[1][1]
    assert not any(f.code in ("XLA998", "XLA999") for f in result.findings)
    # Several real rules, whichever exist by now; XLA101 is the engine's first rule.
    codes = {f.code for f in result.findings}
    assert "XLA101" in codes and len(codes) >= 3, codes


def test_findings_match_a_run_without_the_broken_rules(
    broken_rules: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = SAMPLE.read_text(encoding="utf-8")
    with_broken = analyze(source, target="modern")
    fixed_with_broken = fix_source(source, target="modern")
    monkeypatch.setattr(analysis, "all_rules", all_rules)
    clean = analyze(source, target="modern")
    assert clean.rule_errors == []
    assert with_broken.findings == clean.findings
    assert fixed_with_broken.error is None
    assert fixed_with_broken.source == fix_source(source, target="modern").source


def test_cli_reports_the_crash_in_one_line_and_still_reports_findings(tmp_path: Path) -> None:
    # The CLI runs in a subprocess of its own, so the broken rule is installed there.
    script = textwrap.dedent(
        f"""
        import sys
        import xla_lens.engine.analysis as analysis
        from xla_lens.rules.registry import all_rules
        from tests.robustness.test_rule_crash import BROKEN
        analysis.all_rules = lambda: (*BROKEN, *all_rules())
        from xla_lens.cli import main
        sys.exit(main(["check", "--target", "modern", {str(SAMPLE)!r}]))
        """
    )
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 1, run.stderr
    assert "XLA101" in run.stdout
    crash_lines = [line for line in run.stderr.splitlines() if "internal error" in line]
    assert len(crash_lines) == 2
    assert "XLA998" in crash_lines[0] and "other rules still ran" in crash_lines[0]
    assert "Traceback" not in run.stderr
