"""XLA102 at a device-type derivation, proven by running (protocol in README.md).

``device_type = "cuda" if "cuda" in device else "cpu"`` choosing between ``nullcontext()``
and the autocast: once the device is XLA the autocast is dead code unless the derivation
learns about "xla". The proof runs the conversion (with the device picker's review fix
accepted) under torch_xla and reads the dtype the forward ran in; the same conversion
without the new XLA case is run too, to show the silent fp32 that the finding prevents.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from .harness import FIXTURES, _env, assert_proven, prove, run_script

DTYPE_LINE = re.compile(r"^xla-lens-forward-dtype:\s*(\S+)\s*$", re.M)
XLA_CASE = '"xla" if "xla" in device else '


def test_the_xla_case_keeps_mixed_precision_on_xla():
    result = prove(FIXTURES / "amp_device_type_guard.py", accept_review=("XLA101",))
    assert_proven(result)
    out = result.converted_source
    assert f'device_type = "cuda" if "cuda" in device else {XLA_CASE}"cpu"' in out
    assert "XLA102" in result.applied
    # On the XLA device the autocast is entered: the forward runs in bf16 ...
    assert set(DTYPE_LINE.findall(result.converted.stdout)) == {"torch.bfloat16"}
    # ... while the original on the CPU takes the nullcontext branch, as before.
    assert set(DTYPE_LINE.findall(result.original.stdout)) == {"torch.float32"}
    # The autocast call itself needs no change once the derivation knows "xla".
    assert "torch.amp.autocast(device_type=device_type, dtype=torch.bfloat16)" in out
    assert "XLA102" not in result.remaining

    # Without the XLA case, the same converted script silently trains in fp32 on XLA.
    without = out.replace(XLA_CASE, "")
    assert without != out
    with tempfile.TemporaryDirectory(prefix="xla-lens-proof-") as tmp:
        script = Path(tmp) / "without_xla_case.py"
        script.write_text(without)
        run = run_script(script, env=_env(None, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1"))
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.param_device and run.param_device.startswith("xla")
    assert set(DTYPE_LINE.findall(run.stdout)) == {"torch.float32"}


LLMC_CTX = (
    "ctx = (\n"
    "    torch.amp.autocast(device_type=device_type, dtype=torch.bfloat16)\n"
    '    if device_type == "cuda"\n'
    "    else nullcontext()\n"
    ")"
)


def test_llmc_form_cuda_only_test_is_rewritten_and_runs_in_bf16():
    """llm.c: ``autocast(...) if device_type == "cuda" else nullcontext()``: the "xla" case
    alone would leave the autocast off on XLA; the fix also lets "xla" pass the test."""
    source = (FIXTURES / "amp_device_type_guard.py").read_text()
    guard = (
        "ctx = (\n"
        "    nullcontext()\n"
        '    if device_type == "cpu"\n'
        "    else torch.amp.autocast(device_type=device_type, dtype=torch.bfloat16)\n"
        ")"
    )
    assert guard in source
    llmc = source.replace(guard, LLMC_CTX)
    assert 'if device_type == "cuda"' in llmc
    with tempfile.TemporaryDirectory(prefix="xla-lens-llmc-") as tmp:
        fixture = Path(tmp) / "amp_device_type_llmc.py"
        fixture.write_text(llmc)
        result = prove(fixture, accept_review=("XLA101",))
    assert_proven(result)
    out = result.converted_source
    assert 'if device_type in ("cuda", "xla")' in out
    assert set(DTYPE_LINE.findall(result.converted.stdout)) == {"torch.bfloat16"}
    assert set(DTYPE_LINE.findall(result.original.stdout)) == {"torch.float32"}
    assert "XLA102" not in result.remaining
