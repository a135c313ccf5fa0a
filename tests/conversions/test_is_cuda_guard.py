"""A ``.cuda()`` under ``if h.is_cuda:`` and a CUDA seed under ``if use_cuda:`` (held-out 21 and
18), proven by running: the converted guard asks for the XLA device, so the tensor built on
the CPU reaches it in every forward (moved to the tested tensor's device, so a CUDA run keeps
working too), and the XLA seed runs unguarded."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove


@pytest.mark.xla
def test_is_cuda_guard_and_guarded_seed_convert_and_run_on_xla():
    result = prove(FIXTURES / "is_cuda_guard.py", cuda_shim=True)
    assert_proven(result)
    out = result.converted_source
    assert 'if h.device.type in ("cuda", "xla"):' in out and ".to(h.device)" in out
    assert "    torch_xla.manual_seed(0)\n" in out and "    if use_cuda:\n" not in out
    assert "xla-lens-base-device: xla" in result.converted.stdout
    assert "xla-lens-base-device: cpu" not in result.converted.stdout
