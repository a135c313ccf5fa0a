"""Property tests over the engine: never crashes, never corrupts code.

Inputs are the samples after random edits (tests/robustness/edits.py). The properties:

* ``analyze`` and ``fix_source`` never raise, whatever the text; no rule crashes on it.
* An unparseable input is reported, never fixed: ``fix_source`` returns it unchanged.
* When ``fix_source`` changes an input, the result parses and fixing it again changes
  nothing (``fix(fix(x)) == fix(x)``).
* One finding's fix (``apply_fix``) changes only its *allowed lines*, defined below, and
  leaves every other byte as it was; line endings, tab indentation and a BOM survive.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xla_lens.engine import analyze, fix_source
from xla_lens.engine.analysis import parse
from xla_lens.engine.apply import FixError
from xla_lens.engine.fixing import apply_fix
from xla_lens.rules.base import (
    AddImport,
    Finding,
    InsertBefore,
    RemoveStatement,
    ReplaceStatement,
)

from .edits import BOM, ROBUST, SAMPLE_TEXTS, Edited, valid_sources, wild_sources

targets = st.sampled_from(["modern", "legacy"])
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def ast_lines(text: str) -> list[str]:
    """Lines with their ends, numbered as ``ast`` numbers them (only CR, LF and CRLF end a
    line). Written here, not taken from the engine, so the test checks the engine."""
    return _LINE.findall(text)


def strip_bom(text: str) -> str:
    return text[1:] if text.startswith(BOM) else text


def ending_style(text: str) -> str | None:
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    if lf == cr == 0:
        return "crlf" if crlf else None
    if crlf == cr == 0:
        return "lf"
    if crlf == lf == 0:
        return "cr"
    return "mixed"


def assert_fix_output(source: str, fixed: str, target: str) -> None:
    """What every changed output must satisfy: parses, is a fixpoint, keeps the BOM, the
    line-ending style and tab indentation of its input."""
    if fixed == source:
        return
    ast.parse(strip_bom(fixed))
    assert fixed.startswith(BOM) == source.startswith(BOM)
    assert not strip_bom(fixed).startswith(BOM), "BOM doubled"
    style = ending_style(strip_bom(source))
    if style in ("lf", "crlf", "cr"):
        assert ending_style(strip_bom(fixed)) in (style, None), f"{style} file got mixed endings"
    assert_last_line_end_kept(source, fixed)
    assert_tabs_kept(source, fixed)
    again = fix_source(fixed, target=target)  # type: ignore[arg-type]
    assert again.error is None, again.error
    assert again.source == fixed, "fix is not idempotent: fix(fix(x)) != fix(x)"


def assert_last_line_end_kept(source: str, fixed: str) -> None:
    # Only for one style of line end: in a mixed file a fix that rewrites the last
    # statement writes the file's default line end, which is fine.
    if ending_style(strip_bom(source)) not in ("lf", "crlf", "cr"):
        return
    for end in ("\r\n", "\n", "\r"):
        if source.endswith(end):
            assert fixed.endswith(end), f"the file's last line lost its {end!r}"
            return


def _indents(text: str) -> list[str]:
    return [m.group(0) for m in re.finditer(r"(?m)^[ \t]+(?=\S)", text)]


def assert_tabs_kept(source: str, fixed: str) -> None:
    """A file indented only with tabs stays so, new lines included: a space-indented line
    added to it would not even parse in most blocks (TabError)."""
    old = _indents(strip_bom(source))
    if old and all(" " not in i for i in old):
        bad = [i for i in _indents(strip_bom(fixed)) if " " in i]
        assert not bad, f"space indentation added to a tab-indented file: {bad[:3]!r}"


@ROBUST
@given(edited=wild_sources(), target=targets)
def test_wild_edits_never_crash_the_engine(edited: Edited, target: str) -> None:
    result = analyze(edited.text, target=target)  # type: ignore[arg-type]
    assert not result.rule_errors, result.rule_errors[0][1]
    outcome = fix_source(edited.text, target=target)  # type: ignore[arg-type]
    if result.ok:
        assert outcome.error is None, outcome.error
        assert_fix_output(edited.text, outcome.source, target)
    else:
        assert result.findings == []
        assert outcome.error is not None
        assert outcome.source == edited.text, "fix changed a file it could not parse"


@ROBUST
@given(edited=valid_sources(), target=targets)
def test_fix_all_output_parses_and_is_a_fixpoint(edited: Edited, target: str) -> None:
    result = analyze(edited.text, target=target)  # type: ignore[arg-type]
    assert result.ok, result.syntax_error
    assert not result.rule_errors, result.rule_errors[0][1]
    outcome = fix_source(edited.text, target=target)  # type: ignore[arg-type]
    assert outcome.error is None, outcome.error
    assert_fix_output(edited.text, outcome.source, target)


# --- one finding's fix: what it may change ------------------------------------------------
#
# The *allowed lines* of a finding F (0-based line numbers of the text without its BOM):
#   1. F's own span, first to last line;
#   2. the span of every edit op of F's fix, first to last line; for the statement ops that
#      libcst anchors before a statement's leading lines (RemoveStatement, ReplaceStatement,
#      InsertBefore) also the comment and blank lines directly above the statement;
#   3. when the fix has an AddImport: the import block, i.e. line 0 to the last line of the
#      leading run of module statements the engine inserts after (a docstring first, then
#      imports and try-blocks of imports); without such a run, the lines above the first
#      statement.
# Every maximal run of lines outside the allowed lines is an *untouched zone*. The fix is
# correct when the new text is  X0 + Z1 + X1 + Z2 + ... + Zk + Xk  for the zones Z1..Zk in
# order, byte for byte, where X0 (before a zone starting at line 0) is empty unless the fix
# adds imports, and Xk (after a zone reaching the end of the file) is empty. That also
# implies the weaker statement checked first: the common prefix of old and new text covers
# everything above the first allowed line, the common suffix everything below the last.


def _leading_block_end(tree: ast.Module) -> int:
    """Last 0-based line of the import block the engine inserts new imports after."""
    end = -1
    for i, stmt in enumerate(tree.body):
        is_import = isinstance(stmt, ast.Import | ast.ImportFrom)
        is_doc = (
            i == 0
            and isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        )
        is_try = isinstance(stmt, ast.Try) and all(
            isinstance(s, ast.Import | ast.ImportFrom) for s in stmt.body
        )
        if not (is_import or is_doc or is_try):
            break
        end = (stmt.end_lineno or stmt.lineno) - 1
    if end < 0 and tree.body:
        first = tree.body[0]
        lines = [first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))]
        end = min(lines) - 2
    return end


def allowed_lines(text: str, finding: Finding) -> set[int]:
    lines = ast_lines(text)
    allowed = set(range(finding.span.start.line, finding.span.end.line + 1))
    assert finding.fix is not None
    for op in finding.fix.ops:
        if isinstance(op, AddImport):
            allowed.update(range(0, _leading_block_end(ast.parse(text)) + 1))
            continue
        span = op.span
        allowed.update(range(span.start.line, span.end.line + 1))
        if isinstance(op, RemoveStatement | ReplaceStatement | InsertBefore):
            line = span.start.line - 1
            while line >= 0 and (not lines[line].strip() or lines[line].lstrip().startswith("#")):
                allowed.add(line)
                line -= 1
    return allowed


def untouched_zones(text: str, allowed: set[int]) -> list[tuple[int, int, str]]:
    """(first line, last line, text) of each maximal run of lines outside ``allowed``."""
    lines = ast_lines(text)
    zones: list[tuple[int, int, str]] = []
    start = None
    for i in range(len(lines) + 1):
        inside = i < len(lines) and i not in allowed
        if inside and start is None:
            start = i
        elif not inside and start is not None:
            zones.append((start, i - 1, "".join(lines[start:i])))
            start = None
    return zones


def assert_only_allowed_lines_changed(old: str, new: str, finding: Finding) -> None:
    assert finding.fix is not None
    lines = ast_lines(old)
    allowed = allowed_lines(old, finding)
    adds_imports = any(isinstance(op, AddImport) for op in finding.fix.ops)
    # The weak form: common prefix and suffix reach the first and last allowed lines.
    # Measured independently (they may overlap): a deleted "x\n    " after "    " can be
    # seen as starting on either side of the indentation.
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    first_allowed, last_allowed = min(allowed), max(allowed)
    if adds_imports:
        # An empty import block still has a place: new imports go just below its end.
        first_allowed = min(first_allowed, _leading_block_end(ast.parse(old)) + 1)
    above = sum(len(line) for line in lines[:first_allowed])
    below = sum(len(line) for line in lines[last_allowed + 1 :])
    assert prefix >= above, f"changed above line {first_allowed + 1}"
    assert suffix >= below, f"changed below line {last_allowed + 1}"
    # The strong form: every untouched zone is in the new text, in order, byte for byte.
    pos = 0
    for first, last, zone in untouched_zones(old, allowed):
        at = new.find(zone, pos)
        assert at >= 0, f"lines {first + 1}-{last + 1} outside the fix were changed"
        if first == 0 and not adds_imports:
            assert at == 0, "text inserted at the top of the file"
        if last == len(lines) - 1:
            assert at + len(zone) == len(new), "text appended after the end of the file"
        pos = at + len(zone)


def _check_each_fix(
    text: str, target: str, pick: Callable[[list[Finding]], list[Finding]] | None = None
) -> int:
    result = analyze(text, target=target)  # type: ignore[arg-type]
    assert result.ok and not result.rule_errors
    fixable = [f for f in result.findings if f.fix is not None]
    applied = 0
    for finding in pick(fixable) if pick else fixable:
        try:
            new = apply_fix(text, finding)
        except FixError:
            continue  # refused: the text is unchanged by construction
        applied += 1
        assert new.startswith(BOM) == text.startswith(BOM)
        ast.parse(strip_bom(new))
        assert_only_allowed_lines_changed(strip_bom(text), strip_bom(new), finding)
        style = ending_style(strip_bom(text))
        if style in ("lf", "crlf", "cr"):
            assert ending_style(strip_bom(new)) == style, f"{finding.code} broke {style} endings"
        assert_tabs_kept(text, new)
        assert_last_line_end_kept(text, new)
    return applied


@ROBUST
@given(edited=valid_sources(), target=targets, data=st.data())
def test_one_fix_changes_only_its_own_lines(
    edited: Edited, target: str, data: st.DataObject
) -> None:
    # A few findings per example: each fix is a libcst parse, and the samples' own
    # findings are all checked by the parametrized test below.
    def pick(found: list[Finding]) -> list[Finding]:
        if not found:
            return []
        return data.draw(st.lists(st.sampled_from(found), max_size=3, unique_by=id))

    _check_each_fix(edited.text, target, pick)


@pytest.mark.parametrize("name", sorted(SAMPLE_TEXTS))
@pytest.mark.parametrize("variant", ["lf", "crlf", "cr", "tabs", "bom"])
def test_every_fix_of_the_samples_applies_cleanly(name: str, variant: str) -> None:
    text = SAMPLE_TEXTS[name]
    if variant == "crlf":
        text = text.replace("\n", "\r\n")
    elif variant == "cr":
        text = text.replace("\n", "\r")
    elif variant == "tabs":
        text = re.sub(r"(?m)^(?: {4})+", lambda m: "\t" * (len(m.group(0)) // 4), text)
    elif variant == "bom":
        text = BOM + text
    result = analyze(text, target="modern")
    fixable = [f for f in result.findings if f.fix is not None]
    # Unlike random edits, the samples are what the fixes are written for: none may refuse.
    for finding in fixable:
        apply_fix(text, finding)
    assert _check_each_fix(text, "modern") == len(fixable)


# --- positions: the model's view of lines and columns agrees with ast ---------------------


@ROBUST
@given(edited=valid_sources(), data=st.data())
def test_model_segments_and_spans_agree_with_ast(edited: Edited, data: st.DataObject) -> None:
    model = parse(edited.text)
    nodes = [
        n
        for n in ast.walk(model.tree)
        if isinstance(n, ast.expr | ast.stmt) and getattr(n, "end_lineno", None)
    ]
    picked = data.draw(st.lists(st.sampled_from(nodes), max_size=30, unique_by=id))
    lines = ast_lines(model.source)
    for node in picked:
        expected = ast.get_source_segment(model.source, node)
        assert model.segment(node) == expected
        span = model.span(node)
        if span.start.line == span.end.line:
            text = lines[span.start.line][span.start.col : span.end.col]
        else:
            text = (
                lines[span.start.line][span.start.col :]
                + "".join(lines[span.start.line + 1 : span.end.line])
                + lines[span.end.line][: span.end.col]
            )
        assert text == expected, f"span {span} of {type(node).__name__}"


@pytest.mark.parametrize("breaker", ["\x0c", "\x0b", "\x1c", "\x85", "\u2028", "\u2029"])
def test_suppression_and_columns_survive_characters_splitlines_breaks_at(breaker: str) -> None:
    # Python does not end a line at these, str.splitlines does: a model built on
    # splitlines numbered every later line one too far.
    text = f'import torch\n# a {breaker} comment\nd = torch.device("cuda")  # xla-lens: ignore\n'
    assert analyze(text, target="modern").findings == []
    text = f'import torch\n# a {breaker} comment\n_ = "ü😀"; d = torch.device("cuda")\n'
    (finding,) = [f for f in analyze(text, target="modern").findings if f.code == "XLA101"]
    assert (finding.span.start.line, finding.span.start.col) == (2, 14)
