"""A ``--cuda`` flag guarding the move and a static step method in another module (held-out
78, KnowledgeGraphEmbedding), proven by running: Convert moves the model to the XLA device under
the flag and adds the step sync to the loop; with ``--cuda`` the converted script trains on the
XLA device with the original's losses."""

from __future__ import annotations

import pytest
from xla_lens.engine import analyze

from .harness import FIXTURES, assert_proven, convert, prove

FIXTURE = FIXTURES / "kge_static_step.py"


def test_the_flag_is_named_and_the_loop_gets_its_sync():
    text = FIXTURE.read_text()
    found = analyze(text, path=str(FIXTURE)).findings
    (flag,) = [f for f in found if f.code == "XLA101" and "decides the device" in f.message]
    assert "used only when --cuda is given" in flag.message
    out, applied, _remaining = convert(text, str(FIXTURE))
    assert "XLA107" in applied
    assert 'print("xla-lens-loss:", log["loss"])\n        torch_xla.sync()\n' in out


@pytest.mark.xla
def test_the_converted_script_trains_on_xla_with_the_flag():
    result = prove(
        FIXTURE,
        steps=6,
        args=["--cuda"],
        cuda_shim=True,
        extra_files=[FIXTURES / "kge_model"],
        in_place=True,
    )
    assert_proven(result, min_steps=6)
    assert result.converted_source.count("torch_xla.sync()") == 1
