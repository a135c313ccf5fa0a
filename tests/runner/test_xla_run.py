"""Real torch_xla 2.9 on CPU PJRT: the events point at the lines that caused them."""

from __future__ import annotations

import pytest
from xla_lens.runner import RunOptions

from .conftest import DATA, PYTHON, marked_line, of_type, run_collect

pytestmark = pytest.mark.xla
SCRIPT = DATA / "recompile_hostread.py"


@pytest.fixture(scope="module")
def recompile_run():
    # One run serves every assertion below: a torch_xla start costs seconds on 2 cores.
    return run_collect(RunOptions(SCRIPT, interpreter=PYTHON))


def test_runs_on_cpu_pjrt_and_says_why(recompile_run):
    summary, events = recompile_run
    assert summary.status == "ok" and summary.returncode == 0 and summary.steps == 5
    device = of_type(events, "device")[0]
    assert device.device == "CPU" and device.reason and device.torch_xla_version == "2.9.0"
    # a converted script did XLA work: no "never used the XLA device"
    assert not [p for p in summary.problems if p.kind == "no-xla"]


def test_host_read_compiles_and_executes_at_the_item_line(recompile_run):
    summary, events = recompile_run
    host = marked_line(SCRIPT, "# HOST-READ")
    at_host = [e for e in of_type(events, "execute") if e.line == host]
    assert len(at_host) == 5 and all("access tensor value" in e.cause for e in at_host)
    assert all(e.file == str(SCRIPT) for e in at_host)
    assert sorted(e.step for e in at_host) == [1, 2, 3, 4, 5]
    kinds = {(p.kind, p.line) for p in summary.problems}
    assert ("host-read", host) in kinds
    # .item() is the host read, not a CPU fallback of an unlowered op
    assert "aten::_local_scalar_dense" in summary.fallbacks
    assert not [p for p in summary.problems if p.kind == "cpu-fallback"]


def test_batch_size_change_recompiles_every_step_explained_at_its_cause(recompile_run):
    summary, events = recompile_run
    sync = marked_line(SCRIPT, "# RECOMPILE")
    compiles = [e for e in of_type(events, "compile") if e.line == sync]
    assert [e.step for e in compiles] == [1, 2, 3, 4, 5]
    assert len({e.graph_hash for e in compiles}) == 5
    assert all(e.seconds and e.seconds > 0 for e in compiles)
    stats = summary.line(str(SCRIPT), sync)
    assert stats is not None and stats.uncached_compiles == 5 and stats.graphs == 5
    assert stats.compile_s == pytest.approx(sum(e.seconds for e in compiles))
    # explained at its cause: the line that makes the new shape, naming the sync as trigger
    cause = marked_line(SCRIPT, "# CAUSE")
    problem = next(p for p in summary.problems if p.kind == "recompilation")
    assert (problem.file, problem.line, problem.change_kind) == (str(SCRIPT), cause, "shape")
    assert (problem.trigger_file, problem.trigger_line) == (str(SCRIPT), sync)
    assert (
        problem.message.startswith("recompiles: shape f32[") and "(aten::normal)" in problem.message
    )
    # nothing is attributed to library frames or to lines that do not compile
    lines = {e.line for e in of_type(events, "compile")}
    assert lines == {sync, marked_line(SCRIPT, "# HOST-READ")}


def test_per_step_metric_deltas(recompile_run):
    summary, events = recompile_run
    steps = of_type(events, "step")
    assert [s.step for s in steps] == [1, 2, 3, 4, 5]
    assert all(s.uncached_compiles == 2 and s.compile_s > 0 for s in steps)
    assert all(s.transfer_from_device_count >= 1 for s in steps)
    assert summary.uncached_compiles == 10


def test_steps_limit_stops_an_endless_loop_cleanly():
    summary, events = run_collect(
        RunOptions(DATA / "steps_forever.py", interpreter=PYTHON, steps=3, timeout=120)
    )
    assert summary.status == "step-limit" and summary.returncode == 0
    assert summary.steps == 3 and [s.step for s in of_type(events, "step")] == [1, 2, 3]


def test_distributed_two_cpu_replicas_end_bounded_and_name_a_hang():
    """torch_xla.launch with CPU_NUM_DEVICES=2 runs one process with a thread per device. On
    this 2-core machine the gradient all-reduce was seen to hang (GUIDE G) until XLA's
    rendezvous aborts the process after 10 s: the run must still end, name the hang at the
    collective and leave nothing behind. Where the all-reduce completes, both replicas finish."""
    script = DATA / "dist_train.py"
    summary, events = run_collect(
        RunOptions(script, interpreter=PYTHON, env={"CPU_NUM_DEVICES": "2"}, timeout=150)
    )
    assert summary.status in ("ok", "failed"), summary.status  # not "timeout": XLA ended it
    text = "\n".join(e.text for e in of_type(events, "output"))
    if summary.status == "ok":
        assert "replica 0 of 2 done" in text and "replica 1 of 2 done" in text
    else:
        assert "rendezvous" in text
        assert any(p.kind == "hang" for p in summary.problems)
    sync = marked_line(script, "torch_xla.sync()")
    assert {e.line for e in of_type(events, "compile")} == {sync}
    assert all(e.function == "_mp_fn" for e in of_type(events, "compile"))
