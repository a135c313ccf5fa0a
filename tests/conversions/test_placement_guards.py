"""Pickers whose availability test also decides placement elsewhere, proven by running.

Held-out finding: the picker alone rewritten to the XLA device left ``if use_cuda:`` /
``if device.type == "cuda":`` placement False on an XLA host, so the model stayed on the CPU
("Expected XLA tensor") while the tool said nothing was left. Each fixture is converted with the
safe fixes (Convert) and with the XLA101 review fixes accepted too, and run under torch_xla PJRT
CPU: either the device reaches XLA with the original's losses, or Convert leaves the picker for
review and the safe conversion still trains on the CPU exactly like the original.
"""

from __future__ import annotations

import pytest
from xla_lens.engine import analyze

from .harness import FIXTURES, assert_proven, prove

pytestmark = pytest.mark.xla


def _xla101(name: str):
    return [f for f in analyze((FIXTURES / name).read_text()).findings if f.code == "XLA101"]


@pytest.mark.parametrize("fixture", ["guard_use_cuda_flag.py", "guard_accel_flag.py"])
def test_availability_flag_is_rewritten_with_the_picker_and_trains_on_xla(fixture):
    result = prove(FIXTURES / fixture, steps=3)
    assert_proven(result)
    assert "XLA101" in result.applied and "XLA101" not in result.remaining
    flag = "use_cuda" if "cuda" in fixture else "use_accel"
    assert f"{flag} = True\n" in result.converted_source
    assert "is_available()" not in result.converted_source


def test_inline_flag_test_keeps_the_flag_and_the_device_reaches_xla():
    result = prove(FIXTURES / "guard_inline_accel.py", steps=3, args=("--accel",))
    assert_proven(result)
    assert "if opt.accel:\n    device = torch_xla.device()\n" in result.converted_source
    assert result.remaining.count("XLA101") == 0


def test_inline_flag_without_the_flag_still_trains_on_the_cpu_like_the_original():
    result = prove(FIXTURES / "guard_inline_accel.py", steps=3)
    conv, orig = result.converted, result.original
    assert orig is not None and orig.returncode == 0 and conv.returncode == 0, result.describe()
    assert conv.param_device == "cpu" and orig.param_device == "cpu", result.describe()
    assert conv.losses == pytest.approx(orig.losses, rel=1e-5), result.describe()


def test_device_type_guard_leaves_the_picker_for_review_and_the_safe_run_is_unchanged():
    (finding,) = [f for f in _xla101("guard_device_type_trap.py") if f.fix is not None]
    assert not finding.fix.safe
    assert 'line 17 `if device.type == "cuda":`' in finding.fix.review_reason
    assert "fix needs review" in finding.message
    result = prove(FIXTURES / "guard_device_type_trap.py", steps=3)
    assert "XLA101" not in result.applied and "XLA101" in result.remaining
    assert 'torch.device("cuda" if torch.cuda.is_available() else "cpu")' in (
        result.converted_source
    )
    conv, orig = result.converted, result.original
    assert orig is not None and orig.returncode == 0 and conv.returncode == 0, result.describe()
    assert conv.param_device == "cpu" == orig.param_device, result.describe()
    assert conv.losses == pytest.approx(orig.losses, rel=1e-5), result.describe()


@pytest.mark.parametrize("reviewed", [False, True])
def test_gpu_index_is_kept_and_the_picker_alone_brings_the_device_to_xla(reviewed):
    (index,) = [f for f in _xla101("guard_gpu_index_worker.py") if "device number" in f.message]
    assert index.fix is None and "tested for None" in index.message
    result = prove(
        FIXTURES / "guard_gpu_index_worker.py",
        steps=3,
        accept_review=("XLA101",) if reviewed else None,
    )
    assert_proven(result)
    assert "    args.gpu = gpu\n" in result.converted_source
    assert 'loc = f"{device.type}:{args.gpu}"' in result.converted_source


@pytest.mark.parametrize("fixture", ["guard_use_cuda_flag.py", "guard_accel_flag.py"])
def test_reviewed_conversion_of_the_flag_fixtures_trains_on_xla_too(fixture):
    result = prove(FIXTURES / fixture, steps=3, accept_review=("XLA101",), run_original=False)
    assert_proven(result)
