"""The check, fix and rules commands."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterator
from pathlib import Path

from ..engine import ConfigError, FixOutcome, Settings, analyze, fix_source, resolve_target
from ..engine.config import parse_codes, settings_for_path
from ..engine.consistency import as_held, may_hold
from ..engine.fix_plan import plan as fix_plan
from ..engine.leftover import CLI_HELD, CLI_REVIEW, leftover
from ..rules.registry import all_rules, get_rule
from . import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK
from .files import FileProblem, SourceFile, discover, link_target, read_source
from .fix_passes import fix_files
from .output import Reported, format_json, format_sarif, format_text, rule_page, rules_markdown


def _cli_settings(args: argparse.Namespace) -> dict:
    return {
        "target": args.target,
        "select": parse_codes(args.select, "--select") if args.select else None,
        "ignore": parse_codes(args.ignore, "--ignore") if args.ignore else None,
        "interpreter": args.interpreter,
    }


def _settings(path: Path, overrides: dict) -> Settings:
    # pyproject.toml first, the command line on top of it.
    return settings_for_path(path).merged(**overrides)


def _err(message: str) -> None:
    print(f"xla-lens: {message}", file=sys.stderr)


def check_command(args: argparse.Namespace) -> int:
    try:
        overrides = _cli_settings(args)
    except ConfigError as exc:
        _err(str(exc))
        return EXIT_ERROR
    reported: list[Reported] = []
    problems = 0
    files = 0
    plan = bool(getattr(args, "fix_plan", False))
    for path in discover(args.paths):
        try:
            source = read_source(path)
            settings = _settings(path, overrides)
        except (FileProblem, ConfigError) as exc:
            _err(str(exc))
            problems += 1
            continue
        files += 1
        result = analyze(source.text, str(path), settings, resolve_target(settings))
        if result.syntax_error is not None:
            se = result.syntax_error
            _err(
                f"{path}:{se.span.start.line + 1}:{se.span.start.col + 1}: {se.message} (not analysed)"
            )
            problems += 1
            continue
        for code, _tb in result.rule_errors:
            _err(f"{path}: internal error in rule {code}; other rules still ran (please report)")
        # With --fix-plan, run the rounds `fix` runs, so a review fix that `fix` applies once
        # another is in is shown as such (engine/fix_plan.py). Not by default: the rounds
        # re-analyse and rewrite the file with libcst, several times the cost of the check.
        later: dict = {}
        held: dict[int, str] = {}
        shown = result.findings
        if plan or may_hold(result.findings, source.text):
            target = resolve_target(settings)
            later, held = fix_plan(source.text, str(path), settings, target, result.findings)
            if not plan:
                later = {}  # the default view names review fixes as such; --fix-plan says more
            # A safe fix `fix` holds back so its result stays consistent is shown as held.
            shown = [as_held(f, held[i]) if i in held else f for i, f in enumerate(shown)]
        reported.extend(
            Reported(path, f, later.get(i), planned=plan, held=i in held)
            for i, f in enumerate(shown)
        )
    if args.format == "json":
        print(format_json(reported))
    elif args.format == "sarif":
        print(format_sarif(reported, Path.cwd()))
    else:
        if reported:
            print(format_text(reported))
        fixable = sum(
            1
            for r in reported
            if r.finding.fix is not None and (r.finding.fix.safe or r.applied_with is not None)
        )
        summary = f"{len(reported)} finding{'s' * (len(reported) != 1)} in {files} file{'s' * (files != 1)}"
        review = sum(
            1
            for r in reported
            if r.finding.fix is not None and not r.finding.fix.safe and r.applied_with is None
        )
        notes = []
        if fixable:
            notes.append(f"{fixable} fixable with `xla-lens fix`")
        if review and not plan:
            notes.append(
                f"{review} more need review on their own: `check --fix-plan` names those "
                "`fix` applies once the others are in"
            )
        if notes:
            summary += f" ({'; '.join(notes)})"
        # The findings (stdout) come before the summary (stderr) in a terminal that shows both.
        sys.stdout.flush()
        print(summary, file=sys.stderr if reported else sys.stdout)
    if problems:
        return EXIT_ERROR
    return EXIT_FINDINGS if reported else EXIT_OK


def fix_command(args: argparse.Namespace) -> int:
    try:
        overrides = _cli_settings(args)
    except ConfigError as exc:
        _err(str(exc))
        return EXIT_ERROR
    outside_links: list[Path] = []
    paths = list(discover(args.paths, outside_links))
    unsafe = getattr(args, "unsafe_fixes", False)

    def fix_one(path: Path, source: SourceFile) -> FixOutcome:
        try:
            settings = _settings(path, overrides)
        except ConfigError as exc:
            raise FileProblem(str(exc)) from exc
        return fix_source(source.text, str(path), settings, resolve_target(settings), unsafe=unsafe)

    # Passes until nothing changes: a file's fixes may depend on its siblings as written by
    # this run (cli/fix_passes.py).
    result = fix_files(paths, fix_one, write=not args.diff, report=_err)
    problems = result.problems
    changed_files = 0
    remaining = 0
    for run in result.runs:
        path, outcome = run.path, run.outcome
        if args.diff and outcome.remaining and run.changed:
            # The file is not written: say whose lines these are (the messages cite them too).
            _err(f"{path}: left after these fixes (line numbers of the fixed text, b/ in the diff)")
        for f in outcome.remaining:
            remaining += 1
            why = f.fix.review_reason or "may change behaviour" if f.fix else ""
            note = f.manual or (
                (
                    f"{f.fix.title} (held back, not applied: {why})"
                    if unsafe
                    else f"{f.fix.title} (needs review, not applied: {why}; apply with --unsafe-fixes)"
                )
                if f.fix
                else ""
            )
            print(
                f"{path}:{f.span.start.line + 1}:{f.span.start.col + 1}: {f.code} {f.message}"
                + (f"\n    {note}" if note else ""),
                file=sys.stderr,
            )
        left = leftover(outcome.remaining)
        if not left.empty:
            print(f"{path}: {left.statement(CLI_HELD if unsafe else CLI_REVIEW)}", file=sys.stderr)
        if not run.changed:
            continue
        changed_files += 1
        if args.diff:
            sys.stdout.writelines(_unified_diff(run.original, run.final, path))
        else:
            codes = sorted(set(run.applied))
            via = (
                f" (through the link, into {run.written})"
                if path.is_symlink() and run.written
                else ""
            )
            print(
                f"fixed {path}{via}: {len(run.applied)} fix{'es' * (len(run.applied) != 1)} ({', '.join(codes)})"
            )
    for link in outside_links:
        _err(
            f"{link}: skipped, a link to {link_target(link)} outside the folder"
            " (name the file itself to fix it)"
        )
    verb = "would change" if args.diff else "changed"
    print(
        f"{changed_files} file{'s' * (changed_files != 1)} {verb}; {remaining} finding{'s' * (remaining != 1)} left for you (review or by hand)",
        file=sys.stderr,
    )
    if problems:
        return EXIT_ERROR
    if args.diff and changed_files:
        return EXIT_FINDINGS
    return EXIT_FINDINGS if remaining else EXIT_OK


def _unified_diff(before: str, after: str, path: Path) -> Iterator[str]:
    """The diff ``patch`` and ``git apply`` read: a last line with no newline is followed by
    git's marker line (difflib leaves it unterminated, and what is printed next joins it)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    for line in lines:
        if line.endswith(("\n", "\r")):
            yield line
        else:
            yield line + "\n\\ No newline at end of file\n"


def rules_command(args: argparse.Namespace) -> int:
    if args.code:
        rule = get_rule(args.code.strip().upper())
        if rule is None:
            _err(f"unknown rule {args.code!r} (`xla-lens rules` lists them)")
            return EXIT_ERROR
        print(rule_page(rule), end="")
        return EXIT_OK
    if args.format == "markdown":
        print(rules_markdown())
        return EXIT_OK
    for r in all_rules():
        fix = "fix" if r.has_fix else "   "
        print(f"{r.code}  {fix}  {r.category:<13} {r.summary}")
    return EXIT_OK
