"""A flag-guarded move after the optimizer (held-out 81), proven by running: XLA109's safe
fix moves the whole ``if args.cuda:`` block above the optimizer, and with ``--cuda`` the
converted script trains on the XLA device with the original's losses (without the reorder the
loss would never change)."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, convert, prove

FIXTURE = FIXTURES / "guarded_move_after_optimizer.py"


def test_the_guard_moves_up_with_the_move():
    out, applied, _remaining = convert(FIXTURE.read_text(), FIXTURE.name)
    assert "XLA109" in applied
    guard = out.index("if args.cuda:\n        model = model.to(torch_xla.device())")
    assert guard < out.index("optimizer = optim.Adam(")


@pytest.mark.xla
def test_the_converted_script_trains_on_xla_with_the_flag():
    result = prove(FIXTURE, steps=5, args=["--cuda"], cuda_shim=True)
    assert_proven(result, min_steps=5)
