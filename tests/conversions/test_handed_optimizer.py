"""A trainer handed a model and the optimizer built from it, which moves the model itself
(held-out 47's spoter2): proven by running that the device fix there must wait for review.
Convert alone keeps the script as it ran (on the CPU, same losses) and leaves XLA109's error
standing; the device fix accepted without moving the model first trains nothing on XLA."""

from __future__ import annotations

import math

import pytest

from .harness import FIXTURES, convert, prove

FIXTURE = FIXTURES / "handed_optimizer_trainer.py"


def test_convert_leaves_the_trainers_device_and_reports_the_stale_optimizer():
    out, _applied, remaining = convert(FIXTURE.read_text(), FIXTURE.name)
    assert 'torch.device("cuda:0" if torch.cuda.is_available() else "cpu")' in out
    assert "XLA109" in remaining and "XLA101" in remaining


@pytest.mark.xla
def test_safe_conversion_means_the_same_and_the_review_fix_alone_trains_nothing():
    safe = prove(FIXTURE, steps=6)
    assert safe.original.returncode == 0 and safe.converted.returncode == 0, safe.describe()
    assert safe.converted.param_device == "cpu"  # still where the original ran on this host
    assert len(safe.converted.losses) == len(safe.original.losses) == 6
    for a, b in zip(safe.original.losses, safe.converted.losses, strict=True):
        assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7), safe.describe()
    # Step 4 sees step 0's batch again: the original has trained in between.
    assert not math.isclose(safe.original.losses[0], safe.original.losses[4], rel_tol=1e-4)

    reviewed = prove(FIXTURE, steps=6, run_original=False, accept_review={"XLA101"})
    conv = reviewed.converted
    assert conv.returncode == 0, reviewed.describe()
    assert conv.param_device.startswith("xla"), reviewed.describe()
    # The optimizer holds the CPU parameters: the model on XLA never changes.
    assert math.isclose(conv.losses[0], conv.losses[4], rel_tol=1e-6), reviewed.describe()
