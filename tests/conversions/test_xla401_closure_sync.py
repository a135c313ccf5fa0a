"""XLA401's step-closure fix is safe only where something syncs after it (proven by running:
fixtures/accelerate_*.py, protocol in README.md). accelerate's ``prepare`` wraps a DataLoader
in an MpDeviceLoader, which marks every step, but hands a generator back as it is, and its
optimizer step does not mark the step: there a closure never runs."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, assert_proven, prove

pytest.importorskip("accelerate")


@pytest.mark.xla
def test_a_closure_in_a_loop_nothing_syncs_would_never_run_so_none_is_offered():
    fixture = FIXTURES / "accelerate_cycle_loader_nosync.py"
    safe = prove(fixture)
    # Convert leaves the report: the converted run reports every step like the original.
    assert "add_step_closure" not in safe.converted_source
    assert "XLA401" in safe.remaining
    assert_proven(safe, min_steps=3)
    # Accepting every review fix changes nothing here either: the closure that ran at no sync
    # (earlier sessions proved such a run prints no loss at all) is no fix any more.
    accepted = prove(fixture, accept_review=["XLA401"], run_original=False)
    assert "add_step_closure" not in accepted.converted_source
    run = accepted.converted
    assert run.returncode == 0, accepted.describe()
    assert len(run.losses) >= 3, accepted.describe()


@pytest.mark.xla
def test_a_generator_loop_gets_its_sync_and_then_the_closure_runs_every_step():
    result = prove(FIXTURES / "accelerate_cycle_loader.py")
    assert "XLA107" in result.applied and "XLA401" in result.applied
    assert "torch_xla.sync()" in result.converted_source
    assert "xm.add_step_closure(lambda loss:" in result.converted_source
    assert_proven(result, min_steps=3)


@pytest.mark.xla
def test_a_closure_in_a_loop_over_a_prepared_dataloader_runs_every_step():
    result = prove(FIXTURES / "accelerate_prepared_loader.py")
    assert "XLA401" in result.applied
    assert "xm.add_step_closure(lambda loss:" in result.converted_source
    assert_proven(result, min_steps=3)
