"""XLA106's pl.MpDeviceLoader(loader, device) is safe only when ``device`` is the XLA device
once the safe fixes are in (held-out trap: imagenet's picker fix waits for review, the wrap was
applied anyway, and every run failed at the first batch with "Check failed: device.type() ==
at::kXLA"). Proven by running the fixtures (protocol in README.md)."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove


@pytest.mark.xla
def test_loader_wrapped_with_a_device_parameter_the_safe_picker_makes_xla():
    result = prove(FIXTURES / "loader_device_param.py")
    assert_proven(result, expect_mp_fn=False)
    out = result.converted_source
    assert "for x, y in pl.MpDeviceLoader(loader, device):" in out
    assert "device = torch_xla.device()" in out
    assert {"XLA101", "XLA106"} <= set(result.applied)
    # The loader syncs every iteration: no second sync in the loop.
    assert "torch_xla.sync()" not in out


@pytest.mark.xla
def test_loader_is_not_wrapped_while_the_device_picker_waits_for_review():
    result = prove(FIXTURES / "loader_device_param_review.py")
    conv, orig = result.converted, result.original
    assert orig is not None and orig.returncode == 0, result.describe()
    # The safe conversion runs (the device is still the CPU: XLA101 waits for review) and
    # trains exactly like the original.
    assert conv.returncode == 0, result.describe()
    assert conv.param_device == "cpu", result.describe()
    assert conv.losses == pytest.approx(orig.losses, rel=1e-5), result.describe()
    out = result.converted_source
    assert "in pl.MpDeviceLoader(" not in out
    assert "XLA106" not in result.applied and "XLA106" in result.remaining
    assert "XLA101" in result.remaining
    # Without the loader's sync the loop marks the step itself.
    assert "torch_xla.sync()" in out


@pytest.mark.xla
def test_the_review_reason_is_real_the_wrap_alone_crashes_at_the_first_batch():
    # A reviewer who accepts XLA106's wrap but not XLA101's picker fix: what the safe fix
    # used to do on its own.
    result = prove(
        FIXTURES / "loader_device_param_review.py",
        run_original=False,
        accept_review=["XLA106"],
        consistent=False,  # the quick fix alone, as the editor applies it
    )
    assert "for x, y in pl.MpDeviceLoader(loader, device):" in result.converted_source
    assert result.converted.returncode != 0, result.describe()
    assert "at::kXLA" in result.converted.stderr, result.describe()


def test_fix_holds_the_accepted_wrap_back_with_the_device_it_needs():
    # The same choice through `fix` (review fixes on request): the consistency check sees no
    # device move reach XLA and holds the wrap with it, so the script still trains where it did.
    from .harness import convert

    fixture = FIXTURES / "loader_device_param_review.py"
    out, applied, remaining = convert(fixture.read_text(), fixture.name, accept_review=["XLA106"])
    assert "in pl.MpDeviceLoader(loader" not in out and "XLA106" not in applied
    assert "XLA106" in remaining
