"""The proof harness itself: protocol parsing, and one fixture proven end to end."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, RunResult, assert_proven, parse_protocol, prove


def test_protocol_lines_are_parsed():
    out = "noise\nxla-lens-loss: 1.5\nxla-lens-loss: 0.25\nxla-lens-mp-fn: started\n"
    out += "xla-lens-param-device: xla:0\n"
    assert parse_protocol(out) == ([1.5, 0.25], ["xla:0"], 1)


def test_assert_proven_rejects_params_left_on_the_cpu(tmp_path):
    from .harness import ProofResult

    ok = RunResult(0, "", "", [1.0, 0.5], ["cpu"])
    result = ProofResult(
        tmp_path / "f.py", "", [], [], ok, RunResult(0, "", "", [1.0, 0.5], ["cpu"])
    )
    with pytest.raises(AssertionError, match="not on XLA"):
        assert_proven(result)
    result.converted.param_devices = ["xla:0"]
    assert_proven(result)
    result.converted.losses = [1.0, 0.6]
    with pytest.raises(AssertionError, match="step 1"):
        assert_proven(result)


@pytest.mark.xla
def test_basic_picker_converts_and_trains_on_xla():
    result = prove(FIXTURES / "basic_picker.py", steps=3)
    assert_proven(result)
    assert result.original.param_device == "cpu"
    assert len(result.converted.losses) == 3
