"""XLA401's step-closure fix in a step function the loop calls, when the loop can break out
after the call (held-out 51, pyGAT's early stopping): the break skips the loop's sync, so the
closure of that last iteration never runs. Proven by running: Convert keeps the report as it is;
the fix accepted anyway loses the last epoch's report."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove


@pytest.mark.xla
def test_a_report_in_an_epoch_function_keeps_its_last_epoch_when_the_loop_stops_early():
    # Held-out 51 (pyGAT): deferred into a step closure, the report of the epoch the loop
    # breaks out of never ran (the break skips the loop's sync). Convert leaves it as it is.
    fixture = FIXTURES / "early_stop_epoch_report.py"
    safe = prove(fixture, steps=4)
    assert "add_step_closure" not in safe.converted_source
    assert "XLA401" in safe.remaining
    assert_proven(safe, min_steps=4)
    # Accepted anyway, the last epoch's report is lost, as the review reason says.
    accepted = prove(fixture, steps=4, accept_review=["XLA401"], run_original=False)
    assert "xm.add_step_closure(lambda loss:" in accepted.converted_source
    assert accepted.converted.returncode == 0, accepted.describe()
    assert len(accepted.converted.losses) == 3, accepted.describe()
