"""A step closure counts on the sync after it as the engine applies the fixes (proven by
running fixtures/parent_loop_sampler.py, protocol in README.md). The loop trains in the
launcher's parent, where the engine holds XLA106's MpDeviceLoader wrap back for review: the
closure XLA401 writes runs only because XLA107 now adds the sync the wrap would have made
(before, XLA107 left the sync to the held-back wrap and the converted run printed no loss)."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, prove


@pytest.mark.xla
def test_a_closure_in_a_parent_loop_runs_every_step_once_converted():
    result = prove(FIXTURES / "parent_loop_sampler.py", steps=4)
    assert "XLA401" in result.applied and "XLA107" in result.applied, result.describe()
    assert "MpDeviceLoader(" not in result.converted_source
    original, converted = result.original, result.converted
    assert original is not None and original.returncode == 0, result.describe()
    assert converted.returncode == 0, result.describe()
    # Same losses, every step: each closure ran at the sync that follows it.
    assert len(original.losses) == 4, result.describe()
    assert converted.losses == pytest.approx(original.losses, rel=0.02), result.describe()
