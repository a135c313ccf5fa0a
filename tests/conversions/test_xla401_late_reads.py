"""XLA401's step closure runs the report at the step's sync: where the reported call reads
state the rest of the step changes (``self.log`` reads ``self.step``, then
``self.step.add_(1)``), the fix is for review (proven by running
fixtures/trainer_log_reads_step.py, protocol in README.md)."""

from __future__ import annotations

import re

import pytest

from .harness import FIXTURES, assert_proven, prove

LOGGED_STEP = re.compile(r"^xla-lens-logged-step:\s*(\d+)\s*$", re.M)


@pytest.mark.xla
def test_a_report_whose_method_reads_a_step_counter_changed_later_stays_in_place():
    fixture = FIXTURES / "trainer_log_reads_step.py"
    safe = prove(fixture)
    assert "add_step_closure" not in safe.converted_source
    assert "XLA401" in safe.remaining
    assert_proven(safe, min_steps=3)
    assert safe.original is not None
    expected = LOGGED_STEP.findall(safe.original.stdout)
    assert expected == ["0", "1", "2"], safe.describe()
    assert LOGGED_STEP.findall(safe.converted.stdout) == expected, safe.describe()
    # Applied anyway (the reviewer accepts it): the losses agree, but every logged step is one
    # late, the change the review reason names.
    accepted = prove(fixture, accept_review=["XLA401"], run_original=False)
    assert "xm.add_step_closure(lambda self, loss: self.log(" in accepted.converted_source
    run = accepted.converted
    assert run.returncode == 0, accepted.describe()
    assert LOGGED_STEP.findall(run.stdout) == ["1", "2", "3"], accepted.describe()
