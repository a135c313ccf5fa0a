"""The per-parse caches and lazy fixes are exact: they change how fast, never what.

``ScriptModel.walk_scope`` keeps each scope's walk, ``ScriptModel.memo`` keeps facts of the
whole script (loop bodies, availability guards, float16 uses, name occurrences ...) and rules
may build a fix's edit operations only when it is used (``LazyOps``). Every finding — message,
span, fix title, safety and edit operations — must be the one the uncached code gives.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xla_lens.engine import analyze
from xla_lens.engine.fixing import apply_fix
from xla_lens.rules.base import Fix, LazyOps, Replace
from xla_lens.semantic.model import ScriptModel
from xla_lens.semantic.span import Pos, Span

from .edits import ROBUST, SAMPLE_TEXTS, Edited, valid_sources


def _findings(text: str, target: str) -> list[str]:
    # repr covers every field, and resolves lazy edit operations.
    return [repr(f) for f in analyze(text, "train.py", target=target).findings]  # type: ignore[arg-type]


def _uncached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ScriptModel, "walk_scope", lambda self, root: self._walk_scope(root))
    monkeypatch.setattr(ScriptModel, "memo", lambda self, key, compute: compute())


@pytest.mark.parametrize("target", ["modern", "legacy"])
@pytest.mark.parametrize("name", sorted(SAMPLE_TEXTS))
def test_samples_same_findings_without_caches(
    name: str, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = _findings(SAMPLE_TEXTS[name], target)
    _uncached(monkeypatch)
    assert _findings(SAMPLE_TEXTS[name], target) == cached


@ROBUST
@given(valid_sources(), st.sampled_from(["modern", "legacy"]))
def test_edited_scripts_same_findings_without_caches(edited: Edited, target: str) -> None:
    cached = _findings(edited.text, target)
    with pytest.MonkeyPatch.context() as mp:
        _uncached(mp)
        assert _findings(edited.text, target) == cached


def test_lazy_ops_are_built_once_and_only_when_used() -> None:
    calls = []
    op = Replace(Span(Pos(0, 0), Pos(0, 1)), "y")

    def build() -> tuple[Replace, ...]:
        calls.append(1)
        return (op,)

    fix = Fix("Rename", LazyOps(build))
    assert calls == []  # detection does not pay for the edit
    assert fix.ops == (op,) and list(fix.ops) == [op] and len(fix.ops) == 1
    assert fix == Fix("Rename", (op,)) and hash(fix) == hash(Fix("Rename", (op,)))
    assert calls == [1]


def test_lazy_fix_applies_like_an_eager_one() -> None:
    text = SAMPLE_TEXTS["mnist_cuda.py"]
    analysis = analyze(text, "train.py", target="modern")
    lazy = [f for f in analysis.findings if f.fix is not None and isinstance(f.fix.ops, LazyOps)]
    assert lazy, "XLA401 builds its step-closure fix lazily"
    for finding in lazy:
        assert finding.fix is not None
        eager = Fix(finding.fix.title, tuple(finding.fix.ops))
        assert apply_fix(text, finding) == apply_fix(
            text, type(finding)(**{**finding.__dict__, "fix": eager})
        )
