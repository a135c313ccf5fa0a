"""A step method looped by another module (DeepRL's ``run_steps(agent)``), proven by running:
reviewed, XLA107's fix adds the sync after the optimizer step, and the converted agent trains
on the XLA device like the original on the CPU; Convert alone (safe fixes) leaves it out."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, convert, prove

FIXTURE = FIXTURES / "step_method_looped_elsewhere.py"


def test_convert_alone_leaves_the_reviewed_sync_out():
    out, _applied, remaining = convert(FIXTURE.read_text(), FIXTURE.name)
    assert "torch_xla.sync()" not in out
    assert "XLA107" in remaining


@pytest.mark.xla
def test_reviewed_sync_lands_after_the_optimizer_step_and_trains_on_xla():
    result = prove(
        FIXTURE,
        extra_files=[FIXTURES / "step_runner"],
        accept_review={"XLA107"},
    )
    assert_proven(result, min_steps=5)
    out = result.converted_source
    assert "self.opt.step()\n        torch_xla.sync()\n" in out
    assert out.count("torch_xla.sync()") == 1
