"""Device pickers whose branches do more than pick the device, proven by running
(protocol: README.md)."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla


def test_preset_default_with_if_else_picker_trains_on_xla():
    # Only the assignment inside the guard rewritten kept the test: the CPU on an XLA host.
    result = prove(FIXTURES / "picker_preset_if_else.py", steps=3)
    assert_proven(result)
    assert "is_available" not in result.converted_source


def test_gpu_index_context_safe_conversion_keeps_the_cpu_run_and_touches_no_cuda():
    # The picker's fix waits for review (its else also sets the index to -1); the context is
    # dropped. The conversion still runs where the original ran, without asking CUDA.
    result = prove(FIXTURES / "picker_gpu_index_context.py", steps=3)
    conv, orig = result.converted, result.original
    assert "torch.cuda.device(" not in result.converted_source
    assert "XLA101" in result.remaining, result.describe()
    assert conv.returncode == 0 and orig is not None and orig.returncode == 0, result.describe()
    assert conv.param_device == "cpu" and conv.losses == orig.losses, result.describe()


def test_gpu_index_context_with_the_picker_reviewed_trains_on_xla():
    # With the index left at 0, torch.cuda.device(0) would raise "Found no NVIDIA driver".
    result = prove(FIXTURES / "picker_gpu_index_context.py", steps=3, accept_review=("XLA101",))
    assert_proven(result)
    assert "torch.cuda" not in result.converted_source
