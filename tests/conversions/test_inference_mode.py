"""XLA121 proven by running (protocol: README.md): validation and sampling under
torch.inference_mode() raise on the XLA device; with no_grad in their place the converted
script trains, validates and samples there with the original's numbers."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from .harness import FIXTURES, _env, assert_proven, prove, run_script

pytestmark = pytest.mark.xla
FIXTURE = FIXTURES / "inference_mode_validation.py"


def test_inference_mode_becomes_no_grad_and_the_conversion_validates_on_xla():
    result = prove(FIXTURE, steps=3)
    assert_proven(result)
    assert result.applied.count("XLA121") == 2 and "XLA121" not in result.remaining
    assert "inference_mode" not in result.converted_source
    # The three training steps, the validation loss and the sample: all compared.
    assert len(result.converted.losses) == 5
    # Without this rule's fix the same conversion stops at its first validation.
    kept = result.converted_source.replace("torch.no_grad()", "torch.inference_mode()")
    with tempfile.TemporaryDirectory(prefix="xla-lens-proof-") as tmp:
        script = Path(tmp) / FIXTURE.name
        script.write_text(kept)
        run = run_script(script, env=_env(3, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1"))
    assert run.returncode != 0 and "inference tensor" in run.stderr
    assert len(run.losses) == 3
