"""Parse a script and run every enabled rule over it."""

from __future__ import annotations

import logging
import re
import traceback
import warnings
from dataclasses import dataclass, field, replace

from ..rules.base import (
    Finding,
    Pos,
    RuleContext,
    Severity,
    Span,
    Target,
    message_as_written,
    review_reason_as_written,
)
from ..rules.parts.cuda_setting_hold import hold_cuda_settings
from ..rules.parts.data_parallel_hold import hold_for_data_parallel
from ..rules.parts.framework_device import leave_framework_device
from ..rules.parts.launch_safety import review_parent_runtime_fixes
from ..rules.parts.paired_device_hold import hold_paired_allocations
from ..rules.parts.scripted_code import leave_scripted_code
from ..rules.parts.stale_optimizer_hold import hold_device_fixes
from ..rules.parts.xla_branch_filter import leave_non_xla_code
from ..rules.registry import all_rules
from ..semantic.chunked_parse import parse_in_chunks
from ..semantic.model import ScriptModel
from ..semantic.tree_index import paused_gc
from .config import Settings, resolve_target
from .incremental import ParsedText, reparse

log = logging.getLogger("xla_lens")

SUPPRESS = re.compile(r"#\s*xla-lens:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")
BOM = "\ufeff"


@dataclass(frozen=True)
class SyntaxProblem:
    message: str
    span: Span


@dataclass
class Analysis:
    path: str
    source: str
    target: Target
    findings: list[Finding] = field(default_factory=list)
    model: ScriptModel | None = None
    syntax_error: SyntaxProblem | None = None
    # (rule code, traceback) for rules that crashed; the other rules still reported.
    rule_errors: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.syntax_error is None


def parse(source: str, path: str = "<script>", previous: ScriptModel | None = None) -> ScriptModel:
    """Parse ``source`` (raises SyntaxError/ValueError/RecursionError on bad input).

    With ``previous`` (the model of an earlier text of the same document) only the
    top-level statement an edit changed is parsed again when that gives the very tree a
    full parse gives (``incremental.reparse``)."""
    text = source[1:] if source.startswith(BOM) else source
    tree = None
    if previous is not None:
        tree = reparse(ParsedText(previous.source, previous.tree), text)
    if tree is None:
        with warnings.catch_warnings():
            # Invalid escape sequences in the user's strings are not our business here.
            warnings.simplefilter("ignore")
            # Slices of a big file at a time: ast.parse's very tree, at about half the peak.
            tree = parse_in_chunks(text, filename=path)
    return ScriptModel(text, tree, path)


def _suppressions(model: ScriptModel) -> dict[int, set[str] | None]:
    """Line → suppressed codes (None = every code) from ``# xla-lens: ignore[...]``."""
    out: dict[int, set[str] | None] = {}
    if "xla-lens" not in model.source:
        return out
    for i, line in enumerate(model.lines):
        m = SUPPRESS.search(line)
        if m:
            codes = m.group("codes")
            out[i] = (
                None
                if codes is None
                else {c.strip().upper() for c in codes.split(",") if c.strip()}
            )
    return out


def _suppressed(finding: Finding, table: dict[int, set[str] | None]) -> bool:
    for line in {finding.span.start.line, finding.span.end.line}:
        if line in table:
            codes = table[line]
            if codes is None or any(finding.code.startswith(c) for c in codes):
                return True
    return False


def _silencer(settings: Settings, table: dict[int, set[str] | None]):
    def silenced(code: str, first_line: int, last_line: int) -> bool:
        if not settings.enabled(code):
            return True
        for line in {first_line, last_line}:
            codes = table.get(line, ())
            if codes is None or any(code.startswith(c) for c in codes):
                return True
        return False

    return silenced


_ASYNC_KEYWORD = re.compile(r"[(,]\s*async\s*=")


def syntax_problem(exc: BaseException, source: str) -> SyntaxProblem:
    if isinstance(exc, SyntaxError) and exc.lineno:
        line = max(exc.lineno - 1, 0)
        col = max((exc.offset or 1) - 1, 0)
        lines = source.splitlines()
        # SyntaxError.offset counts code points in 3.11+ for str input... but can overshoot.
        if line < len(lines):
            col = min(col, len(lines[line]))
        msg = f"syntax error: {exc.msg}"
        if line < len(lines) and _ASYNC_KEYWORD.search(lines[line]):
            # ``targets.cuda(async=True)`` (PyTorch 0.3 scripts, held-out 127): ``async`` is
            # a keyword since Python 3.7, and torch renamed the argument.
            msg += (
                "; `async=` is torch 0.3's name for `non_blocking=` and a keyword since "
                "Python 3.7: rename it to `non_blocking=` so the script parses"
            )
        return SyntaxProblem(msg, Span(Pos(line, col), Pos(line, col + 1)))
    if isinstance(exc, RecursionError | MemoryError):
        msg = "the file is too deeply nested to analyse"
    else:
        msg = f"cannot parse the file: {exc}"
    return SyntaxProblem(msg, Span(Pos(0, 0), Pos(0, 0)))


def analyze(
    source: str,
    path: str = "<script>",
    settings: Settings | None = None,
    target: Target | None = None,
    previous: ScriptModel | None = None,
) -> Analysis:
    """Every enabled rule's findings on ``source``. ``previous``: the model of an earlier
    text of the same document, to parse only what changed (same result either way)."""
    settings = settings or Settings()
    target = target or resolve_target(settings)
    try:
        model = parse(source, path, previous)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return Analysis(path, source, target, syntax_error=syntax_problem(exc, source))
    # No cyclic collection while the rules run: they allocate hundreds of thousands of small
    # objects (indexes, memo entries) and make few cycles, and each collection the
    # allocations trigger walks the whole syntax tree again (10,000 lines: a third of the
    # time). Restored after; what the rules leave is collected then, once.
    with paused_gc():
        return _run_rules(source, path, settings, target, model)


def _run_rules(
    source: str, path: str, settings: Settings, target: Target, model: ScriptModel
) -> Analysis:
    result = Analysis(path, source, target, model=model)
    ctx = RuleContext(target=target)
    suppress = _suppressions(model)
    model.silenced = _silencer(settings, suppress)
    for rule in all_rules():
        if not settings.enabled(rule.code):
            continue
        try:
            found = list(rule.check(model, ctx))
        except Exception:  # one broken rule must not silence the others
            tb = traceback.format_exc()
            log.error("rule %s crashed on %s:\n%s", rule.code, path, tb)
            result.rule_errors.append((rule.code, tb))
            continue
        severity = settings.severity.get(rule.code)
        for f in found:
            if _suppressed(f, suppress):
                continue
            if severity is not None and f.severity != severity:
                f = replace(f, severity=severity)
            result.findings.append(f)
    result.findings = [with_review_note(f) for f in _settled(model, result.findings, target)]
    result.findings.sort(key=lambda f: (f.span.start, f.code))
    return result


def _settled(model: ScriptModel, findings: list[Finding], target: Target) -> list[Finding]:
    """The rules' findings after the checks that read them all together: code a converted
    run never meets is left alone, and safe fixes that would break the program while another
    fix waits for review wait with it (each check's module says which and why)."""
    findings = leave_non_xla_code(model, findings)
    findings = leave_framework_device(model, findings)
    findings = leave_scripted_code(model, findings)
    findings = hold_device_fixes(model, findings, target)
    findings = hold_for_data_parallel(model, findings, target)
    findings = hold_cuda_settings(model, findings)
    findings = hold_paired_allocations(findings)
    return list(review_parent_runtime_fixes(model, findings))


def with_review_note(f: Finding) -> Finding:
    """A finding whose fix needs review says why in its message (the diagnostic a user reads),
    once, whichever rule or check made the fix review-only."""
    if f.fix is None or f.fix.safe or not f.fix.review_reason or "needs review" in f.message:
        return f
    reason = review_reason_as_written(f.fix)
    return replace(f, message=f"{message_as_written(f)} (the fix needs review: {reason})")


__all__ = ["Analysis", "Severity", "SyntaxProblem", "analyze", "parse"]
