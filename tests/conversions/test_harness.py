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


def test_cuda_shim_runs_hard_coded_cuda_on_the_cpu(tmp_path):
    from .harness import _env, run_script

    script = tmp_path / "hard_coded.py"
    script.write_text(
        "import torch\n"
        "m = torch.nn.Linear(2, 2).cuda()\n"
        "x = torch.ones(1, 2).to('cuda:0', non_blocking=True)\n"
        "torch.cuda.set_device(0)\n"
        "print(f'xla-lens-loss: {m(x).sum().item()}')\n"
        "print(f'xla-lens-param-device: {next(m.parameters()).device}')\n"
    )
    result = run_script(script, env=_env(None), cuda_shim=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.param_devices == ["cpu"] and len(result.losses) == 1
