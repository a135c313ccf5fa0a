"""Measure xla-lens on the labelled dev corpus of real public training scripts (issue 10).

    .venv/bin/python bench/corpus_eval.py DIR [--labels FILE] [--verbose] [--json] [--run]

DIR holds the fetched scripts (``DIR/files/<owner>_<name>__<path with / as _>``; never inside
this repository) and optionally ``DIR/siblings/<owner>_<name>/<repo path>``: when the script's
own repo path exists there, it is analysed at that path so imports of sibling modules resolve.
Labels come from ``../shared/corpus-dev/labels.json`` beside the repository (or ``--labels``);
MANIFEST.tsv beside it gives the groups. Per group (A-F) and in total it prints recall against
the ``required`` labels (a label is hit when a finding's lines overlap it), wrong findings
(overlapping a ``trap`` label; in group E every conversion/distributed finding), fixes applied /
safe / unsafe, parse and idempotence after fixing, and crashed rules. ``--run`` then converts and
runs the self-contained scripts described in ``DIR/swaps/runs.json`` (bench/corpus_run.py).
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xla_lens.engine import analyze, fix_source
from xla_lens.rules.base import Category, Finding
from xla_lens.rules.registry import rules_by_code

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LABELS = ROOT.parent / "shared" / "corpus-dev" / "labels.json"
GROUPS = "ABCDEF"
CONVERSION_CATEGORIES = {Category.CONVERSION, Category.DISTRIBUTED}


@dataclass
class Label:
    repo: str
    path: str
    kind: str
    first_line: int
    last_line: int
    text: str
    what: str

    def overlaps(self, first: int, last: int) -> bool:
        return first <= self.last_line and self.first_line <= last


@dataclass
class Hit:
    """One finding, lines 1-based like the labels."""

    code: str
    category: str
    first_line: int
    last_line: int
    message: str
    fix: str  # "safe", "unsafe" or "none"


@dataclass
class FileReport:
    group: str
    name: str
    lines: int
    findings: list[Hit] = field(default_factory=list)
    missed: list[dict] = field(default_factory=list)
    required: int = 0
    required_hit: int = 0
    wrong: list[dict] = field(default_factory=list)
    safe_fixes_offered: int = 0
    unsafe_fixes_offered: int = 0
    applied_safe: int = 0
    applied_with_unsafe: int = 0
    parse_ok: bool = True
    idempotent: bool = True
    problems: list[str] = field(default_factory=list)
    rule_errors: list[str] = field(default_factory=list)
    analyse_ms: float = 0.0


def file_name(repo: str, path: str) -> str:
    owner, name = repo.split("/", 1)
    return f"{owner}_{name}__{path.replace('/', '_')}"


def load_manifest(labels_path: Path) -> list[dict[str, str]]:
    manifest = labels_path.parent / "MANIFEST.tsv"
    with manifest.open(newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def load_labels(labels_path: Path) -> dict[tuple[str, str], list[Label]]:
    out: dict[tuple[str, str], list[Label]] = defaultdict(list)
    for raw in json.loads(labels_path.read_text()):
        label = Label(
            raw["repo"],
            raw["path"],
            raw["kind"],
            int(raw["first_line"]),
            int(raw["last_line"]),
            raw.get("text_on_first_line", ""),
            raw.get("what", ""),
        )
        out[(label.repo, label.path)].append(label)
    return out


def _hit(f: Finding) -> Hit:
    rule = rules_by_code().get(f.code)
    category = str(rule.category) if rule else "?"
    fix = "none" if f.fix is None else ("safe" if f.fix.safe else "unsafe")
    return Hit(f.code, category, f.span.start.line + 1, f.span.end.line + 1, f.message, fix)


def _check_output(report: FileReport, name: str, source: str, unsafe: bool) -> None:
    """The fixed output parses and fixing it again (the same way) changes nothing."""
    tag = "unsafe" if unsafe else "safe"
    try:
        ast.parse(source)
    except SyntaxError as exc:
        report.parse_ok = False
        report.problems.append(f"{tag} fix output does not parse: line {exc.lineno}: {exc.msg}")
        return
    again = fix_source(source, name, target="modern", unsafe=unsafe)
    if again.source != source:
        report.idempotent = False
        report.problems.append(f"{tag} fix is not idempotent (second pass applied {again.applied})")


def evaluate_file(
    group: str, repo: str, path: str, labels: list[Label], corpus: Path
) -> FileReport | None:
    name = file_name(repo, path)
    owner_name = name.split("__", 1)[0]
    script = corpus / "siblings" / owner_name / path
    if not script.is_file():
        script = corpus / "files" / name
    if not script.is_file():
        return None
    source = script.read_text()
    report = FileReport(group, name, source.count("\n"))
    start = time.perf_counter()
    analysis = analyze(source, str(script), target="modern")
    report.analyse_ms = (time.perf_counter() - start) * 1000
    if not analysis.ok:
        report.parse_ok = False
        report.problems.append("the original does not parse")
        return report
    report.rule_errors = [code for code, _ in analysis.rule_errors]
    report.findings = [_hit(f) for f in analysis.findings]
    report.safe_fixes_offered = sum(h.fix == "safe" for h in report.findings)
    report.unsafe_fixes_offered = sum(h.fix == "unsafe" for h in report.findings)
    for label in labels:
        touching = [h for h in report.findings if label.overlaps(h.first_line, h.last_line)]
        if label.kind == "required":
            report.required += 1
            if touching:
                report.required_hit += 1
            else:
                report.missed.append(_label_dict(label))
        elif label.kind == "trap":
            for h in touching:
                why = f"trap L{label.first_line}-{label.last_line}: {label.what}"
                report.wrong.append({**asdict(h), "why": why, "trap": True})
    if group == "E":
        for h in report.findings:
            if h.category in CONVERSION_CATEGORIES and not any(
                w["code"] == h.code and w["first_line"] == h.first_line for w in report.wrong
            ):
                why = "conversion finding on an already-XLA script"
                report.wrong.append({**asdict(h), "why": why, "trap": False})
    safe = fix_source(source, str(script), target="modern")
    unsafe = fix_source(source, str(script), target="modern", unsafe=True)
    report.applied_safe = len(safe.applied)
    report.applied_with_unsafe = len(unsafe.applied)
    for outcome, is_unsafe in ((safe, False), (unsafe, True)):
        if outcome.error:
            report.parse_ok = False
            report.problems.append(f"fix failed: {outcome.error}")
        else:
            _check_output(report, str(script), outcome.source, is_unsafe)
    return report


def _label_dict(label: Label) -> dict:
    return {
        "lines": f"L{label.first_line}-{label.last_line}",
        "text": label.text,
        "what": label.what,
    }


def summarise(reports: list[FileReport]) -> dict:
    def block(rs: list[FileReport]) -> dict:
        required = sum(r.required for r in rs)
        hit = sum(r.required_hit for r in rs)
        return {
            "files": len(rs),
            "required": required,
            "required_hit": hit,
            "recall": round(hit / required, 4) if required else None,
            "wrong_findings": sum(len(r.wrong) for r in rs),
            "trap_hits_with_safe_fix": sum(
                w["trap"] and w["fix"] == "safe" for r in rs for w in r.wrong
            ),
            "findings": sum(len(r.findings) for r in rs),
            "conversion_findings": sum(
                h.category in CONVERSION_CATEGORIES for r in rs for h in r.findings
            ),
            "safe_fixes_offered": sum(r.safe_fixes_offered for r in rs),
            "unsafe_fixes_offered": sum(r.unsafe_fixes_offered for r in rs),
            "applied_safe": sum(r.applied_safe for r in rs),
            "applied_with_unsafe": sum(r.applied_with_unsafe for r in rs),
            "parse_failures": sum(not r.parse_ok for r in rs),
            "not_idempotent": sum(not r.idempotent for r in rs),
            "rule_errors": sum(len(r.rule_errors) for r in rs),
            "analyse_ms": round(sum(r.analyse_ms for r in rs), 1),
        }

    groups = {g: block([r for r in reports if r.group == g]) for g in GROUPS}
    return {"groups": groups, "total": block(reports)}


def by_rule(reports: list[FileReport]) -> dict[str, Counter]:
    wrong: Counter = Counter(w["code"] for r in reports for w in r.wrong)
    fired: Counter = Counter(h.code for r in reports for h in r.findings)
    return {"wrong": wrong, "fired": fired}


def print_table(summary: dict) -> None:
    cols = [
        ("grp", 5),
        ("files", 5),
        ("recall", 16),
        ("wrong", 5),
        ("trap+safe", 9),
        ("finds", 5),
        ("conv", 5),
        ("fix safe/uns", 12),
        ("applied s/+u", 12),
        ("parse", 5),
        ("idem", 5),
        ("crash", 5),
        ("ms", 7),
    ]
    print("  ".join(name.rjust(w) for name, w in cols))
    rows = [*summary["groups"].items(), ("total", summary["total"])]
    for g, b in rows:
        recall = (
            "-" if b["recall"] is None else f"{b['required_hit']}/{b['required']} {b['recall']:.1%}"
        )
        cells = [
            g,
            b["files"],
            recall,
            b["wrong_findings"],
            b["trap_hits_with_safe_fix"],
            b["findings"],
            b["conversion_findings"],
            f"{b['safe_fixes_offered']}/{b['unsafe_fixes_offered']}",
            f"{b['applied_safe']}/{b['applied_with_unsafe']}",
            b["parse_failures"],
            b["not_idempotent"],
            b["rule_errors"],
            b["analyse_ms"],
        ]
        print("  ".join(str(c).rjust(w) for c, (_, w) in zip(cells, cols, strict=True)))
    print(
        "recall: required labels hit; wrong: findings on trap labels (+ every conversion finding"
        " in E); trap+safe: trap hits carrying a safe fix; conv: conversion/distributed findings; fix: offered safe/unsafe; applied:"
        " fixes applied by Convert / with --unsafe-fixes; parse/idem: outputs failing; crash:"
        " rules that raised"
    )


def print_details(reports: list[FileReport], verbose: bool) -> None:
    for r in reports:
        if not (r.missed or r.wrong or r.problems or r.rule_errors):
            continue
        print(f"\n[{r.group}] {r.name}: recall {r.required_hit}/{r.required}")
        if verbose:
            for m in r.missed:
                print(f"  MISSED {m['lines']}: {m['what']}  ({m['text']})")
        elif r.missed:
            print("  missed: " + ", ".join(m["lines"] for m in r.missed))
        for w in r.wrong:
            print(f"  WRONG {w['code']} L{w['first_line']} ({w['fix']} fix): {w['why']}")
        for p in r.problems:
            print(f"  PROBLEM {p}")
        for code in r.rule_errors:
            print(f"  CRASH rule {code}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="corpus folder (outside the repository)")
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    parser.add_argument("--verbose", action="store_true", help="list every missed label")
    parser.add_argument("--json", action="store_true", help="print a JSON summary only")
    parser.add_argument("--run", action="store_true", help="convert and run (DIR/swaps/runs.json)")
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --run: convert with every review-only fix too (as fix --unsafe-fixes)",
    )
    parser.add_argument(
        "--safe-only",
        action="store_true",
        help="with --run: skip the reviewed runs (safe fixes + the accepted review fixes)",
    )
    parser.add_argument("--only", help="evaluate only files whose name contains this")
    parser.add_argument("--markdown", type=Path, help="also write the figures as Markdown here")
    args = parser.parse_args(argv)
    if not args.labels.is_file():
        print(f"error: labels not found: {args.labels} (use --labels)", file=sys.stderr)
        return 2
    if not args.dir.is_dir():
        print(f"error: corpus folder not found: {args.dir}", file=sys.stderr)
        return 2
    labels = load_labels(args.labels)
    reports: list[FileReport] = []
    absent: list[str] = []
    for row in load_manifest(args.labels):
        name = file_name(row["repo"], row["path"])
        if args.only and args.only not in name:
            continue
        rep = evaluate_file(
            row["group"], row["repo"], row["path"], labels[(row["repo"], row["path"])], args.dir
        )
        if rep is None:
            absent.append(name)
        else:
            reports.append(rep)
    summary = summarise(reports)
    summary["absent"] = absent
    rules = by_rule(reports)
    summary["wrong_by_rule"] = dict(rules["wrong"].most_common())
    summary["findings_by_rule"] = dict(rules["fired"].most_common())
    summary["files"] = [asdict(r) for r in reports]
    if args.run:
        from corpus_run import run_all  # noqa: PLC0415  (torch-heavy; only with --run)

        modes = (
            ("unsafe",)
            if args.unsafe_fixes
            else ("safe",)
            if args.safe_only
            else ("safe", "reviewed")
        )
        summary["runs"] = run_all(args.dir, modes=modes, only=args.only)
    if args.markdown:
        from corpus_report import write_markdown  # noqa: PLC0415

        write_markdown(summary, args.markdown)
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print_table(summary)
    if absent:
        print(f"absent from {args.dir}: {', '.join(absent)}")
    print(
        "wrong findings by rule: "
        + (", ".join(f"{c} {n}" for c, n in rules["wrong"].most_common()) or "none")
    )
    print_details(reports, args.verbose)
    if args.run:
        from corpus_run import print_runs  # noqa: PLC0415

        print_runs(summary["runs"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
