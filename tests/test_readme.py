"""The README is the newcomer's entry point: keep its promises checkable."""

from __future__ import annotations

import re
from pathlib import Path

from xla_lens.cli.output import rule_doc_file, rule_doc_path, rules_markdown
from xla_lens.rules.registry import all_rules, short_doc

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_starts_with_the_two_commands() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first_block is not None and README.index("```bash") < 200
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["./scripts/demo", "./scripts/test"]
    for cmd in commands:
        assert (ROOT / cmd).stat().st_mode & 0o111, f"{cmd} is not executable"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./scripts/test" in ci


def test_rules_section_is_generated_from_the_registry() -> None:
    section = re.search(r"<!-- rules:start -->\n(.*?)<!-- rules:end -->", README, re.S)
    assert section is not None
    assert section.group(1).strip() == rules_markdown().strip(), "run ./scripts/gen-readme"
    for rule in all_rules():
        assert f"### {rule.code} {rule.name}" in README
        # One short paragraph per rule (the page's short form) and a link to its page.
        assert f"{short_doc(rule)} [Rule page]({rule_doc_path(rule)})." in README


def test_rule_pages_in_docs_are_generated_from_the_rules() -> None:
    docs = ROOT / "docs" / "rules"
    for rule in all_rules():
        page = ROOT / rule_doc_path(rule)
        assert page.is_file(), f"{page} missing: run ./scripts/gen-readme"
        assert page.read_text() == rule_doc_file(rule), f"{page} stale: run ./scripts/gen-readme"
    expected = {f"{r.code}.md" for r in all_rules()}
    assert {p.name for p in docs.glob("*.md")} == expected, "run ./scripts/gen-readme"
