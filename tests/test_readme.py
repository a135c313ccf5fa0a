"""The README is the newcomer's entry point: keep its promises checkable."""

from __future__ import annotations

import re
from pathlib import Path

from xla_lens.cli.output import rules_markdown
from xla_lens.rules.registry import all_rules

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
