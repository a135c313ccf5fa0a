"""Line references in findings are marked for the carry-over (``semantic.line_refs``) and
rendered away everywhere else: a user, a test or the fixed script never sees a mark."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from xla_lens.engine import analyze, fix_source
from xla_lens.rules.base import Finding, Fix, message_as_written
from xla_lens.semantic.line_refs import (
    CLOSE,
    OPEN,
    line_ref,
    line_refs,
    plain_numbers,
    rendered,
    renumbered,
)
from xla_lens.semantic.span import Pos, Span

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "samples").glob("*.py")) + sorted(
    (ROOT / "tests" / "conversions" / "fixtures").glob("*.py")
)
SPAN = Span(Pos(0, 0), Pos(0, 1))


def _strings(value: object) -> list[str]:
    """Every string reachable from a finding: its texts, its fix's, its ops' code."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, tuple | list):
        return [s for v in value for s in _strings(v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            s
            for f in dataclasses.fields(value)
            if f.name != "marked"
            for s in _strings(getattr(value, f.name))
        ]
    if hasattr(value, "resolve"):  # LazyOps
        return _strings(value.resolve())
    return []


def test_marks_render_as_plain_numbers_and_renumber() -> None:
    text = f"line {line_ref(12)} and lines {line_refs([3, 40])}, XLA102, max_length=512, 7"
    assert rendered(text) == "line 12 and lines 3, 40, XLA102, max_length=512, 7"
    assert plain_numbers(text) == [7]
    assert rendered(renumbered(text, lambda n: n + 1) or "") == (
        "line 13 and lines 4, 41, XLA102, max_length=512, 7"
    )
    assert renumbered(text, lambda n: None if n == 40 else n) is None


def test_findings_and_fixes_store_rendered_text_and_keep_the_marks() -> None:
    fix = Fix("Move it", (), safe=False, review_reason=f"line {line_ref(4)} reads it")
    f = Finding("XLA000", f"see line {line_ref(9)}", SPAN, 2, fix=fix, manual="by hand")
    assert (f.message, fix.review_reason) == ("see line 9", "line 4 reads it")
    assert f.marked == (f"see line {line_ref(9)}", "by hand")
    # ``replace`` keeps the marks of the texts it does not change ...
    moved = dataclasses.replace(f, span=Span(Pos(1, 0), Pos(1, 1)))
    assert moved.marked == f.marked
    longer = dataclasses.replace(f, message=f"{message_as_written(f)} (and line {line_ref(2)})")
    assert longer.message == "see line 9 (and line 2)"
    assert longer.marked == (f"see line {line_ref(9)} (and line {line_ref(2)})", "by hand")
    # ... and drops those of a text it rewrote without them (the new text is taken as is).
    plain = dataclasses.replace(f, message="see line 9 again")
    assert plain.marked is None and plain.message == "see line 9 again"


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_no_mark_reaches_a_user_or_the_fixed_script(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    findings = analyze(source, str(path)).findings
    leaked = [s for f in findings for s in _strings(f) if OPEN in s or CLOSE in s]
    assert not leaked
    for unsafe in (False, True):
        out = fix_source(source, str(path), unsafe=unsafe)
        assert OPEN not in out.source and CLOSE not in out.source
        assert not [s for f in out.remaining for s in _strings(f) if OPEN in s or CLOSE in s]
