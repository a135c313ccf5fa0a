"""Parameter groups from submodules, built into an optimizer before the model moves
(held-out 49's semseg), proven by running: Convert leaves the device for review and reports the
build (XLA109), so the script trains where it did; the device fix alone trains nothing on XLA."""

from __future__ import annotations

import math

import pytest

from .harness import FIXTURES, convert, prove

FIXTURE = FIXTURES / "param_groups_before_move.py"


def test_convert_reports_the_build_and_leaves_the_device_for_review():
    out, _applied, remaining = convert(FIXTURE.read_text(), FIXTURE.name)
    assert 'torch.device("cuda" if torch.cuda.is_available() else "cpu")' in out
    assert "XLA109" in remaining and "XLA101" in remaining


@pytest.mark.xla
def test_safe_conversion_trains_as_before_and_the_device_fix_alone_trains_nothing():
    safe = prove(FIXTURE, steps=6)
    assert safe.original.returncode == 0 and safe.converted.returncode == 0, safe.describe()
    assert safe.converted.param_device == "cpu"
    for a, b in zip(safe.original.losses, safe.converted.losses, strict=True):
        assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7), safe.describe()
    assert not math.isclose(safe.original.losses[0], safe.original.losses[4], rel_tol=1e-4)

    reviewed = prove(FIXTURE, steps=6, run_original=False, accept_review={"XLA101"})
    conv = reviewed.converted
    assert conv.returncode == 0 and conv.param_device.startswith("xla"), reviewed.describe()
    assert math.isclose(conv.losses[0], conv.losses[4], rel_tol=1e-6), reviewed.describe()
