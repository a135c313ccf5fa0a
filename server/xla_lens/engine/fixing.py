"""Fixing: one finding's fix, or every safe fix to a fixpoint (so fix(fix(x)) == fix(x)).

``engine.apply`` (libcst, ~170 ms to import) is imported on first use: the language server
imports this module at start but needs fixes only for codeAction/resolve, fixAll and
Convert, so its first diagnostics do not wait for libcst.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..rules.base import (
    EditOp,
    Finding,
    RemoveStatement,
    Replace,
    ReplaceStatement,
    Span,
    Target,
)
from .analysis import BOM, analyze
from .config import Settings, resolve_target

MAX_ROUNDS = 8


@dataclass
class FixOutcome:
    source: str
    # Codes of the findings whose fixes were applied, in order, with repeats.
    applied: list[str] = field(default_factory=list)
    # Findings that remain afterwards with no safe fix (what the user still has to do).
    remaining: list[Finding] = field(default_factory=list)
    error: str | None = None
    # Each round that changed the text: the text it analysed and the findings it applied
    # (`check` reads them to say which review fixes `fix` applies once others are in).
    rounds: list[tuple[str, list[Finding]]] = field(default_factory=list)
    # Every finding of the result (``remaining`` are those a person still has to act on).
    remaining_all: list[Finding] = field(default_factory=list)
    # Groups of safe fixes held back so the result stays consistent (``engine.consistency``):
    # which findings (a predicate) and why.
    held: list[tuple[Callable[[Finding], bool], str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def _split_bom(source: str) -> tuple[str, str]:
    return (BOM, source[1:]) if source.startswith(BOM) else ("", source)


def apply_fix(source: str, finding: Finding) -> str:
    """The source with one finding's fix applied. Raises FixError."""
    from .apply import FixError, apply_ops

    if finding.fix is None:
        raise FixError(f"{finding.code} has no automatic fix")
    bom, body = _split_bom(source)
    return bom + apply_ops(body, finding.fix.ops).code


def fix_source(
    source: str,
    path: str = "<script>",
    settings: Settings | None = None,
    target: Target | None = None,
    accept: Callable[[Finding], bool] | None = None,
    unsafe: bool = False,
    consistent: bool = True,
) -> FixOutcome:
    """Apply every safe fix (those ``accept`` allows) until nothing more changes.
    With ``unsafe``, fixes marked for review are applied too (ruff's ``--unsafe-fixes``).
    ``consistent``: hold back the device moves, or the XLA-only changes, when the result
    would otherwise have one without the other (``engine.consistency``); off for a caller
    that asks for one rule's fixes alone."""
    from .consistency import as_held, held_group

    settings = settings or Settings()
    target = target or resolve_target(settings)
    outcome = _rounds(source, path, settings, target, accept, unsafe)
    held: list[tuple[Callable[[Finding], bool], str]] = []
    while consistent and outcome.error is None and len(held) < 2:
        applied = [f for _, chosen in outcome.rounds for f in chosen]
        # Every finding left, safe ones too: a device move an earlier group held back is
        # still left to do (held-out 146: the loader wrap went in while the moves waited).
        group = held_group(applied, outcome.remaining_all, outcome.source, unsafe)
        if group is None:
            break
        held.append(group)
        outcome = _rounds(source, path, settings, target, _without(accept, held), unsafe)
    outcome.held = held
    if held:
        # What Convert held back is the user's to review, with the reason.
        out = []
        for f in outcome.remaining_all:
            reason = next((why for g, why in held if f.fix is not None and g(f)), None)
            if reason is not None and f.fix is not None and (f.fix.safe or unsafe):
                f = as_held(f, reason)
            if f.fix is None or not f.fix.safe:
                out.append(f)
        outcome.remaining = out
    return outcome


def _without(
    accept: Callable[[Finding], bool] | None, held: list[tuple[Callable[[Finding], bool], str]]
) -> Callable[[Finding], bool]:
    groups = [g for g, _ in held]
    return lambda f: (accept is None or accept(f)) and not any(g(f) for g in groups)


def _rounds(
    source: str,
    path: str,
    settings: Settings,
    target: Target,
    accept: Callable[[Finding], bool] | None,
    unsafe: bool,
) -> FixOutcome:
    from .apply import FixError, apply_ops

    bom, text = _split_bom(source)
    outcome = FixOutcome(source)
    for _ in range(MAX_ROUNDS):
        analysis = analyze(text, path, settings, target)
        if not analysis.ok:
            outcome.error = (
                analysis.syntax_error.message if analysis.syntax_error else "parse error"
            )
            break
        chosen = [
            f
            for f in analysis.findings
            if f.fix is not None and (f.fix.safe or unsafe) and (accept is None or accept(f))
        ]
        if not chosen:
            break
        chosen = without_nested_fixes(chosen)
        ops: list[EditOp] = [op for f in chosen for op in f.fix.ops]  # type: ignore[union-attr]
        try:
            new_text = apply_ops(text, ops).code
        except FixError:
            new_text, chosen = _apply_one_by_one(text, chosen)
        if new_text == text:
            break
        outcome.applied.extend(f.code for f in chosen)
        outcome.rounds.append((text, chosen))
        text = new_text
    final = analyze(text, path, settings, target)
    outcome.remaining = [f for f in final.findings if f.fix is None or not (f.fix.safe or unsafe)]
    outcome.remaining_all = list(final.findings)
    outcome.source = bom + text
    return outcome


# Edits that rewrite a whole span: another fix's edit inside that span would be overwritten
# (libcst applies both, the outer one last) and lost while counted as applied.
_WHOLE_SPAN_EDITS = (ReplaceStatement, RemoveStatement, Replace)


def without_nested_fixes(findings: list[Finding]) -> list[Finding]:
    """The fixes of one round minus those with an edit inside a span another fix rewrites
    whole (XLA204 rebuilding the ``__main__`` block around XLA116's seed line): they wait
    for the next round, which analyses the rewritten text again."""
    outer = [
        (f, op.span)
        for f in findings
        for op in f.fix.ops  # type: ignore[union-attr]
        if isinstance(op, _WHOLE_SPAN_EDITS)
    ]
    if not outer:
        return findings
    kept = []
    for f in findings:
        spans = [op.span for op in f.fix.ops if isinstance(getattr(op, "span", None), Span)]  # type: ignore[union-attr]
        if any(
            g is not f and span != whole and whole.contains(span)
            for g, whole in outer
            for span in spans
        ):
            continue
        kept.append(f)
    return kept


def _apply_one_by_one(text: str, findings: list[Finding]) -> tuple[str, list[Finding]]:
    """Fallback when the combined edit fails: keep every fix that still applies together with
    those kept before it, in order (spans are only valid for the current text, so the ones
    left out wait for the next round, which re-analyses). One fix per round ran out of rounds
    on held-out 62's CutMix (two fixes on one line, eight loader edits): Convert returned a
    half-converted script. Returns the new text and the findings whose fixes it applied."""
    from .apply import FixError, apply_ops

    kept: list[Finding] = []
    ops: list[EditOp] = []
    new_text = text
    for f in findings:
        trial = [*ops, *f.fix.ops]  # type: ignore[union-attr]
        try:
            new_text = apply_ops(text, trial).code
        except FixError:
            continue
        kept.append(f)
        ops = trial
    return (new_text, kept) if kept else (text, [])
