"""Formatters for `xla-lens check`: text for people, JSON for scripts, SARIF for code scanning."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..engine.fix_plan import AppliedWith
from ..rules.base import DOC_BASE, Finding, Rule, Severity, doc_url
from ..rules.registry import all_rules, get_rule, short_doc

SEVERITY_NAMES = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "information",
    Severity.HINT: "hint",
}
SARIF_LEVELS = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "note",
    Severity.HINT: "note",
}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


# What `check` can say of a review fix without running `fix`'s rounds: true whether or not a
# later round applies it (engine/fix_plan.py).
UNPLANNED_REVIEW = "review: not applied by `fix` unless its other fixes make it safe"


@dataclass
class Reported:
    path: Path
    finding: Finding
    # A fix that needs review on its own but that `fix` applies in a later round, with the
    # fixes it goes with (``engine.fix_plan``): `check` must say what `fix` does.
    applied_with: AppliedWith | None = None
    # Whether those rounds were run (`check --fix-plan`): without them `check` cannot say
    # which review fixes `fix` ends up applying, and says so instead of guessing.
    planned: bool = True
    # A safe fix `fix` holds back so its result stays consistent (engine/consistency.py).
    held: bool = False


def as_record(r: Reported) -> dict:
    f = r.finding
    return {
        "path": str(r.path),
        "code": f.code,
        "severity": SEVERITY_NAMES[f.severity],
        "message": f.message,
        "line": f.span.start.line + 1,
        "column": f.span.start.col + 1,
        "end_line": f.span.end.line + 1,
        "end_column": f.span.end.col + 1,
        "fix": fix_record(f, r.applied_with, r.planned),
        "manual": f.manual or None,
    }


def fix_record(
    f: Finding, applied_with: AppliedWith | None = None, planned: bool = True
) -> dict | None:
    """The fix as `fix` treats it: ruff's "applicability" names, so tools that read ruff's JSON
    read ours the same way (safe: applied by `fix`; unsafe: only with `--unsafe-fixes`, unless
    ``applied_by_fix_with`` lists the fixes `fix` applies it together with; that field is null
    when `fix`'s rounds were not run, `check` without `--fix-plan`)."""
    if f.fix is None:
        return None
    record: dict = {"title": f.fix.title, "applicability": "safe" if f.fix.safe else "unsafe"}
    if not f.fix.safe:
        record["review_reason"] = f.fix.review_reason or "may change behaviour"
        if not planned:
            record["applied_by_fix_with"] = None
        elif applied_with is not None:
            record["applied_by_fix_with"] = [
                {"code": code, "line": line} for code, line in applied_with.after
            ]
    return record


def _fix_note(r: Reported) -> str:
    """What `fix` does with the finding's fix, when it is not simply safe."""
    f = r.finding
    if f.fix is None or f.fix.safe:
        return ""
    if r.applied_with is not None:
        return f" ({r.applied_with.phrase()})"
    if r.held:
        return f" (not applied by `fix`: {f.fix.review_reason})"
    if not r.planned:
        return f" ({UNPLANNED_REVIEW})"
    return " (review: not applied by `fix`)"


def format_text(items: Sequence[Reported]) -> str:
    lines = []
    for r in items:
        f = r.finding
        where = f"{r.path}:{f.span.start.line + 1}:{f.span.start.col + 1}"
        sev = SEVERITY_NAMES[f.severity]
        line = f"{where}: {f.code} [{sev}] {f.message}"
        if f.fix is not None:
            line += f"\n    fix: {f.fix.title}{_fix_note(r)}"
        elif f.manual:
            line += f"\n    no automatic fix: {f.manual}"
        lines.append(line)
    return "\n".join(lines)


def format_json(items: Sequence[Reported]) -> str:
    return json.dumps([as_record(r) for r in items], indent=2, ensure_ascii=False)


def format_sarif(items: Sequence[Reported], root: Path) -> str:
    rules = list(all_rules())
    index = {r.code: i for i, r in enumerate(rules)}
    driver = {
        "name": "xla-lens",
        "version": __version__,
        "semanticVersion": __version__,
        "informationUri": DOC_BASE,
        "rules": [
            {
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": short_doc(r)},
                "helpUri": doc_url(r),
                "defaultConfiguration": {"level": SARIF_LEVELS[r.severity]},
                "properties": {"category": str(r.category), "fixable": r.has_fix},
            }
            for r in rules
        ],
    }
    results = []
    for r in items:
        f = r.finding
        try:
            uri = r.path.resolve().relative_to(root.resolve()).as_posix()
            location = {"uri": uri, "uriBaseId": "SRCROOT"}
        except ValueError:
            location = {"uri": r.path.resolve().as_uri()}
        message = f.message
        if f.fix is not None:
            if f.fix.safe:
                message += f" Fix: {f.fix.title}."
            elif r.applied_with is not None:
                message += f" Fix: {f.fix.title} ({r.applied_with.phrase()})."
            else:
                message += f" Fix: {f.fix.title} (needs review)."
        elif f.manual:
            message += f" {f.manual}"
        result = {
            "ruleId": f.code,
            "level": SARIF_LEVELS[f.severity],
            "message": {"text": message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": location,
                        "region": {
                            "startLine": f.span.start.line + 1,
                            "startColumn": f.span.start.col + 1,
                            "endLine": f.span.end.line + 1,
                            "endColumn": f.span.end.col + 1,
                        },
                    }
                }
            ],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        results.append(result)
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "originalUriBaseIds": {"SRCROOT": {"uri": root.resolve().as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)


def rules_markdown() -> str:
    """The README's rule reference, generated so it cannot drift from the rules' pages."""
    rules = all_rules()
    out = ["| code | rule | what it means | fix |", "|---|---|---|---|"]
    for r in rules:
        fix = "yes" if r.has_fix else "no (explains what to do)"
        out.append(f"| [{r.code}](#{r.doc_anchor}) | {r.category} | {r.summary} | {fix} |")
    for r in rules:
        link = f"[Rule page]({rule_doc_path(r)})"
        out += ["", f"### {r.code} {r.name}", "", f"{short_doc(r)} {link}."]
    return "\n".join(out)


def rule_doc_path(rule: Rule) -> str:
    """Where ./scripts/gen-readme writes the rule's page, relative to the repository root."""
    return f"docs/rules/{rule.code}.md"


def rule_page(rule: Rule) -> str:
    """The rule's page with its registry facts under the title (`xla-lens rules XLAnnn`)."""
    facts = (
        f"Category: {rule.category} · Default severity: {SEVERITY_NAMES[rule.severity]} · "
        f"Automatic fix: {'yes' if rule.has_fix else 'no'}"
    )
    title, _, body = rule.doc.strip().partition("\n")
    if not title.startswith("# "):
        # No page (a test fails for that): still say what the registry knows.
        return f"# {rule.code} {rule.name}\n\n{facts}\n\n{rule.summary}.\n"
    return f"{title}\n\n{facts}\n\n{body.strip()}\n"


def rule_doc_file(rule: Rule) -> str:
    """The text of docs/rules/XLAnnn.md: the page, marked as generated from its source."""
    source = rule.check.__module__.replace(".", "/")
    return (
        f"<!-- Generated by ./scripts/gen-readme from server/{source}.md: edit that file. -->\n"
        + rule_page(rule)
    )


__all__ = [
    "Reported",
    "format_json",
    "format_sarif",
    "format_text",
    "get_rule",
    "rule_doc_file",
    "rule_doc_path",
    "rule_page",
    "rules_markdown",
]
