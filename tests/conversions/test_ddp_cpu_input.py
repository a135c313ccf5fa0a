"""XLA205: a DDP model on the XLA device called with a CPU tensor, proven by running.

With ``device_ids`` DDP moved the input; the review fix drops them, and the input finding
must not go with them: it moves the input with the model's device, and the conversion
(``fix --unsafe-fixes``) trains under torch_xla (PJRT CPU).
"""

from __future__ import annotations

from .harness import FIXTURES, assert_proven, prove


def test_dropping_device_ids_moves_the_cpu_input_and_trains():
    result = prove(
        FIXTURES / "ddp_device_ids_cpu_input.py", run_original=False, accept_review=("XLA205",)
    )
    out = result.converted_source
    assert "DDP(model)" in out
    assert "ddp_model(torch.randn(20, 10).to(torch_xla.device()))" in out
    assert not [f for f in result.remaining if "CPU tensor" in str(f)]
    assert_proven(result, expect_mp_fn=True, min_steps=3)
    assert "Expected XLA tensor" not in result.converted.stderr
