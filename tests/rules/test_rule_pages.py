"""Every rule has a documentation page of the fixed shape, and every surface shows it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from xla_lens.cli import main
from xla_lens.cli.output import rule_page
from xla_lens.lsp.hover import _rule_text
from xla_lens.rules import pages
from xla_lens.rules.base import doc_url
from xla_lens.rules.registry import all_rules, fix_safety, get_rule, short_doc

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "server" / "xla_lens" / "rules"
RULE_MODULE = re.compile(r"^xla\d{3}_\w+$")
RULES = all_rules()


def test_every_rule_module_has_a_page_beside_it_and_every_page_a_module() -> None:
    modules = {p.stem for p in RULES_DIR.glob("xla*.py") if RULE_MODULE.match(p.stem)}
    docs = {p.stem for p in RULES_DIR.glob("xla*.md")}
    assert modules - docs == set(), "rules without a page"
    assert docs - modules == set(), "pages without a rule module"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_page_has_the_fixed_shape(rule) -> None:
    page = rule.doc
    assert page, f"{rule.code} has no page (server/xla_lens/rules/<module>.md)"
    assert pages.title(page) == f"{rule.code} {rule.name}"
    sections = pages.sections(page)
    assert list(sections) == list(pages.SECTIONS), f"{rule.code}: sections {list(sections)}"
    for name, text in sections.items():
        assert text.strip(), f"{rule.code}: empty section {name!r}"
    intro = short_doc(rule)
    assert intro and intro != rule.summary + ".", f"{rule.code}: no short form"
    assert len(intro) <= 500, f"{rule.code}: the short form should be one or two sentences"
    assert "```" in sections["Example"] and "```" in sections["Use instead"]
    assert "GUIDE.md" in sections["References"]
    safety = fix_safety(rule)
    assert safety, f"{rule.code}: the Fix safety section starts with its one-line summary"
    if not rule.has_fix:
        assert safety.startswith("No automatic fix"), f"{rule.code} has no fix: say so first"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_links_between_pages_name_existing_rules(rule) -> None:
    codes = {r.code for r in RULES}
    for target in re.findall(r"\]\(([^)#]+\.md)\)", rule.doc):
        assert target.removesuffix(".md") in codes, f"{rule.code} links to {target}"


def test_short_form_and_fix_safety_come_from_the_page() -> None:
    rule = get_rule("XLA109")
    assert rule is not None
    assert short_doc(rule).startswith("Reports an optimizer built from a model's parameters")
    assert fix_safety(rule).startswith("Safe when the move is a statement of its own")


def test_page_parsing_takes_the_first_paragraph_and_the_sections() -> None:
    page = "# XLA999 demo\n\nFirst line\nwraps here.\n\nSecond.\n\n## Why it matters on XLA\n\nA.\n\n## Fix safety\n\nSafe.\nReally.\n\nMore.\n"
    assert pages.title(page) == "XLA999 demo"
    assert pages.intro(page) == "First line wraps here."
    assert pages.sections(page) == {
        "Why it matters on XLA": "A.",
        "Fix safety": "Safe.\nReally.\n\nMore.",
    }
    assert pages.first_paragraph(pages.sections(page)["Fix safety"]) == "Safe. Really."
    assert pages.intro("") == "" and pages.sections("") == {}


def test_pages_are_package_data() -> None:
    # A non-editable install must carry the pages next to the modules.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "rules/*.md" in config["tool"]["setuptools"]["package-data"]["xla_lens"]
    assert pages.read_page("xla101_cuda_device").startswith("# XLA101 cuda-device")
    assert pages.read_page("xla000_missing") == ""


def test_doc_url_points_at_the_generated_page() -> None:
    rule = get_rule("XLA101")
    assert rule is not None
    assert doc_url(rule) == "https://github.com/xla-lens/xla-lens/blob/main/docs/rules/XLA101.md"


def test_cli_rules_code_prints_the_page(capsys) -> None:
    assert main(["rules", "XLA101"]) == 0
    out = capsys.readouterr().out
    rule = get_rule("XLA101")
    assert rule is not None
    assert out == rule_page(rule)
    assert out.startswith(
        "# XLA101 cuda-device\n\nCategory: conversion · Default severity: warning"
    )
    for section in pages.SECTIONS:
        assert f"## {section}" in out
    assert "torch_xla.device()" in out and "xm.xla_device()" in out

    assert main(["rules", "xla402"]) == 0
    assert capsys.readouterr().out.startswith("# XLA402 dynamic-shapes")


def test_cli_rules_unknown_code_is_one_line_and_exit_2(capsys) -> None:
    assert main(["rules", "XLA999"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().count("\n") == 0 and "unknown rule 'XLA999'" in captured.err


def test_cli_rules_without_code_still_lists(capsys) -> None:
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert all(r.code in out for r in RULES) and "## " not in out


def test_hover_text_for_a_rule_is_its_short_form_safety_and_link() -> None:
    rule = get_rule("XLA402")
    assert rule is not None
    text = _rule_text("XLA402")
    assert text is not None
    assert short_doc(rule) in text
    assert f"Fix safety: {fix_safety(rule)}" in text
    assert f"({doc_url(rule)})" in text
    assert _rule_text("XLA999") is None


def test_sarif_rules_carry_the_short_form_and_link_to_the_page(tmp_path) -> None:
    import json

    from xla_lens.cli.output import format_sarif
    from xla_lens.rules.base import DOC_BASE

    driver = json.loads(format_sarif([], tmp_path))["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == DOC_BASE
    by_id = {r["id"]: r for r in driver["rules"]}
    for rule in RULES:
        assert by_id[rule.code]["helpUri"] == doc_url(rule)
        assert by_id[rule.code]["fullDescription"]["text"] == short_doc(rule)
