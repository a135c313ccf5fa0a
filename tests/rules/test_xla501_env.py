"""XLA501 on the precision environment variables: torch_xla 2.9 still honours XLA_USE_BF16 and
XLA_DOWNCAST_BF16 (verified under PJRT_DEVICE=CPU: with either set to 1, a float32 tensor on the
XLA device computes in bf16; torch_xla warns they will be deprecated), while it ignores
XLA_USE_FP16 / XLA_DOWNCAST_FP16 (warns, computes in float32)."""

import pytest

from tests.helpers import findings, fixed, src


@pytest.mark.parametrize("key", ["XLA_USE_BF16", "XLA_DOWNCAST_BF16"])
def test_bf16_switches_are_deprecated_but_still_honoured(key):
    code = f"""
    import os
    import torch_xla

    os.environ["{key}"] = "1"
    device = torch_xla.device()
    """
    (found,) = findings(code, "XLA501")
    assert found.span.start.line == 3
    assert "deprecated" in found.message and "still honours" in found.message
    assert "does not honour" not in found.message and "XLA:GPU" not in found.message
    assert found.deprecated
    # Removing the line would train in float32 instead: advice only, never a fix.
    assert found.fix is None
    assert 'torch.autocast("xla", dtype=torch.bfloat16)' in found.manual
    assert "float32" in found.manual
    assert fixed(code, "XLA501", unsafe=True) == src(code)


def test_a_bf16_switch_set_off_is_not_reported():
    code = """
    import os

    os.environ["XLA_USE_BF16"] = "0"
    os.environ.setdefault("XLA_DOWNCAST_BF16", "false")
    """
    assert findings(code, "XLA501") == []


@pytest.mark.parametrize("key", ["XLA_USE_FP16", "XLA_DOWNCAST_FP16"])
def test_fp16_switches_are_ignored_by_torch_xla_2_9(key):
    code = f"""
    import os

    os.environ["{key}"] = "1"
    """
    (found,) = findings(code, "XLA501")
    assert "ignores" in found.message and "float32" in found.message
    assert found.fix is None
