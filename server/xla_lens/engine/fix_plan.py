"""What `fix` does with a fix that needs review on its own.

`fix` works in rounds (``fixing.fix_source``): after the first round's safe fixes the script is
analysed again, and a finding whose fix waited for another one may now be safe. XLA101 cannot
change ``device = rank % torch.cuda.device_count()`` while ``torch.cuda.set_device(device)`` reads
it; XLA403's safe fix removes that call, and the next round changes the device. Together the two
keep the meaning (the call is CUDA-only, the index picks the process's device); alone, the device
change would feed an XLA device to ``set_device``. So `check`, which shows the first analysis,
must not say "review: not applied by `fix`" there: it names the fix the change goes with.

The answer comes from running the same rounds `fix` runs, not from rules' guesses, so the two
cannot disagree. Which earlier fix a promoted finding waited for is read from its review reason
(the lines and rule codes it names: "line 67 `torch.cuda.set_device(device)`", "XLA101's fix"),
matched against the lines the applied fixes edit.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..rules.base import AppendToBody, Finding, InsertAfter, InsertBefore, Target
from .analysis import analyze
from .config import Settings
from .fixing import FixOutcome, fix_source

_LINE = re.compile(r"\blines? (\d+)")
_CODE = re.compile(r"\b(XLA\d{3})\b")
_SHOWN = 3


@dataclass(frozen=True)
class AppliedWith:
    """A fix `fix` applies in a later round: ``after`` holds the (code, 1-based line) of the
    fixes it goes with, in the text `check` shows; empty when the reason names none."""

    after: tuple[tuple[str, int], ...]

    def phrase(self) -> str:
        if not self.after:
            return "applied by `fix` once its other safe fixes are in; on its own it needs review"
        shown = " and ".join(f"{code}'s fix at line {line}" for code, line in self.after[:_SHOWN])
        more = f" and {len(self.after) - _SHOWN} more" if len(self.after) > _SHOWN else ""
        return f"applied by `fix` together with {shown}{more}; on its own it needs review"


def _line_map(old: str, new: str) -> dict[int, tuple[int, bool]]:
    """0-based line of ``new`` -> (line of ``old``, whether the line is unchanged). A line of a
    rewritten block maps to its place in the old block (so a column may differ)."""
    a, b = old.splitlines(), new.splitlines()
    out: dict[int, tuple[int, bool]] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for j in range(j1, j2):
            if tag == "equal":
                out[j] = (i1 + j - j1, True)
            elif tag == "replace":
                out[j] = (min(i1 + j - j1, i2 - 1), False)
    return out


# Edits that insert next to a span (or at the end of a block) change no line of it: XLA107's
# sync appended to a loop does not touch the autocast inside the loop.
_INSERTS = (InsertAfter, InsertBefore, AppendToBody)


def _edited_lines(f: Finding) -> set[int]:
    """0-based lines a finding's fix rewrites (none for a fix that only inserts)."""
    if f.fix is None:
        return set()
    spans = [
        op.span  # type: ignore[union-attr]
        for op in f.fix.ops
        if not isinstance(op, _INSERTS) and getattr(op, "span", None) is not None
    ]
    return {line for s in spans for line in range(s.start.line, s.end.line + 1)}


def applied_later(
    source: str,
    path: str,
    settings: Settings,
    target: Target,
    findings: list[Finding],
) -> dict[int, AppliedWith]:
    """Index in ``findings`` (the first analysis of ``source``, as `check` shows it) of each
    finding whose fix needs review on its own but which `fix` applies in a later round."""
    return plan(source, path, settings, target, findings)[0]


def plan(
    source: str,
    path: str,
    settings: Settings,
    target: Target,
    findings: list[Finding],
) -> tuple[dict[int, AppliedWith], dict[int, str]]:
    """``applied_later``'s answer, and the index of each safe fix `fix` holds back so its
    result stays consistent (``engine.consistency``), with the reason."""
    if not any(f.fix is not None and f.fix.safe for f in findings):
        return {}, {}  # nothing is applied in the first round, so there is no later one
    outcome = fix_source(source, path, settings, target)
    held = {
        i: reason
        for i, f in enumerate(findings)
        if f.fix is not None and f.fix.safe
        for reason in [next((why for g, why in outcome.held if g(f)), None)]
        if reason is not None
    }
    return _promoted(outcome, path, settings, target, findings), held


def _promoted(
    outcome: FixOutcome, path: str, settings: Settings, target: Target, findings: list[Finding]
) -> dict[int, AppliedWith]:
    waiting = [i for i, f in enumerate(findings) if f.fix is not None and not f.fix.safe]
    if not waiting or outcome.error is not None or len(outcome.rounds) < 2:
        return {}
    # Each round's lines, mapped back to the text `check` analysed.
    to_first: list[dict[int, tuple[int, bool]]] = [
        {i: (i, True) for i in range(len(outcome.rounds[0][0].splitlines()) + 1)}
    ]
    for k in range(1, len(outcome.rounds)):
        step = _line_map(outcome.rounds[k - 1][0], outcome.rounds[k][0])
        prev = to_first[-1]
        to_first.append(
            {j: (prev[i][0], exact and prev[i][1]) for j, (i, exact) in step.items() if i in prev}
        )

    found: dict[int, AppliedWith] = {}
    for k in range(1, len(outcome.rounds)):
        for g in outcome.rounds[k][1]:
            where = to_first[k].get(g.span.start.line)
            if where is None:
                continue
            line, exact = where
            match = [
                i
                for i in waiting
                if i not in found
                and findings[i].code == g.code
                and findings[i].span.start.line == line
            ]
            if exact:
                match = [
                    i for i in match if findings[i].span.start.col == g.span.start.col
                ] or match
            if not match:
                continue
            i = match[0]
            after = _waits_for(findings[i], outcome.rounds, k, g, to_first)
            if not after and k == 1:
                after = _tried_alone(findings[i], outcome.rounds[0], path, settings, target)
            found[i] = AppliedWith(after)
    return found


_TRIES = 6


def _tried_alone(
    f: Finding,
    first: tuple[str, list[Finding]],
    path: str,
    settings: Settings,
    target: Target,
) -> tuple[tuple[str, int], ...]:
    """When the review reason points at no applied fix: apply the first round's fixes one at a
    time (the nearest to ``f`` first, at most a few) and name the first after which ``f``'s
    fix is safe."""
    from .apply import FixError, apply_ops

    text, applied = first
    line = f.span.start.line
    for g in sorted(applied, key=lambda g: abs(g.span.start.line - line))[:_TRIES]:
        try:
            alone = apply_ops(text, g.fix.ops).code  # type: ignore[union-attr]
        except FixError:
            continue
        where = _line_map(text, alone)
        analysis = analyze(alone, path, settings, target)
        if any(
            h.code == f.code
            and h.fix is not None
            and h.fix.safe
            and where.get(h.span.start.line, (-1, False))[0] == line
            for h in analysis.findings
        ):
            edited = sorted(_edited_lines(g)) or [g.span.start.line]
            return ((g.code, edited[0] + 1),)
    return ()


def _waits_for(
    f: Finding,
    rounds: list[tuple[str, list[Finding]]],
    k: int,
    g: Finding,
    to_first: list[dict[int, tuple[int, bool]]],
) -> tuple[tuple[str, int], ...]:
    """The fixes of rounds up to ``k`` that ``f``'s review reason points at: one whose edit is
    on a line the reason names, or of a rule it names (by the line the reason names, else the
    fix's own line)."""
    reason = (f.fix.review_reason if f.fix is not None else "") or f.message
    lines = {int(n) - 1 for n in _LINE.findall(reason)}
    codes = set(_CODE.findall(reason)) - {f.code}
    after: list[tuple[str, int]] = []
    for j in range(k + 1):
        for other in rounds[j][1]:
            if other is g:
                continue
            touched = {to_first[j][n][0] for n in _edited_lines(other) if n in to_first[j]}
            named = sorted(touched & lines)
            if named:
                item = (other.code, named[0] + 1)
            elif other.code in codes:
                own = to_first[j].get(other.span.start.line, (other.span.start.line, False))
                item = (other.code, min(touched or {own[0]}) + 1)
            else:
                continue
            if item not in after:
                after.append(item)
    return tuple(after)


__all__ = ["AppliedWith", "applied_later", "plan"]
