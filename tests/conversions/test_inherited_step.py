"""A loop whose optimizer step is a method inherited from a base class in another module
(held-out 47's spoter2), proven by running: Convert adds the step sync after the inherited
step's call, and the converted trainer trains on the XLA device with the original's losses."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, convert, prove

FIXTURE = FIXTURES / "inherited_step_trainer.py"


def test_convert_adds_the_sync_to_the_loop_of_the_inherited_step():
    out, applied, _remaining = convert(FIXTURE.read_text(), str(FIXTURE))
    assert "XLA107" in applied
    body = out.split("self.backward_pass(loss)\n", 1)[1].split("\n\n", 1)[0]
    assert body.rstrip().endswith("            torch_xla.sync()"), body


@pytest.mark.xla
def test_the_converted_trainer_trains_on_xla():
    result = prove(FIXTURE, steps=6, extra_files=[FIXTURES / "inherited_base"], in_place=True)
    assert_proven(result, min_steps=6)
    assert result.converted_source.count("torch_xla.sync()") == 1
