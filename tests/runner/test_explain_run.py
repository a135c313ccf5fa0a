"""Real torch_xla 2.9 runs (CPU PJRT): each recompilation is reported at its cause line, with what
changed, a hint and the trigger line. One run per kind; each costs seconds on 2 cores."""

from __future__ import annotations

import pytest
from xla_lens.runner import RunOptions

from .conftest import DATA, PYTHON, marked_line, of_type, run_collect

pytestmark = pytest.mark.xla


def recompilation(name: str, explain_steps: int = RunOptions.explain_steps, closed_at=None):
    script = DATA / f"explain_{name}.py"
    options = RunOptions(script, interpreter=PYTHON, timeout=120, explain_steps=explain_steps)
    summary, events = run_collect(options)
    assert summary.status == "ok", summary
    assert summary.explain_window_step == closed_at
    found = [p for p in summary.problems if p.kind == "recompilation"]
    # the problem event carries the new fields on the wire too
    wire = [e.to_dict() for e in of_type(events, "problem") if e.kind == "recompilation"]
    assert [w["cause_line"] for w in wire] == [p.cause_line for p in found]
    return script, found


def test_smaller_last_batch_is_explained_at_the_to_device_line():
    script, (p,) = recompilation("shape")
    cause, trigger = marked_line(script, "# CAUSE"), marked_line(script, "# TRIGGER")
    assert (p.file, p.line) == (str(script), cause) == (p.cause_file, p.cause_line)
    assert (p.trigger_file, p.trigger_line) == (str(script), trigger)
    assert p.change_kind == "shape" and p.changed == "f32[8,12] → f32[6,12]"
    assert p.message.startswith("recompiles: input shape f32[8,12] → f32[6,12]")
    assert "drop_last" in p.hint and p.doc_url.endswith("/XLA402.md")


def test_baked_slice_offset_is_explained_as_a_constant_from_a_closed_window():
    # 4 steps, window of 3: the bootstrap closes the dump after step 3 (the file becomes a link
    # to /dev/null); the graphs of steps 1-3 still explain the recompilations
    script, (p,) = recompilation("constant", explain_steps=3, closed_at=3)
    assert p.line == marked_line(script, "# CAUSE")
    assert p.trigger_line == marked_line(script, "# TRIGGER")
    assert p.change_kind == "constant" and p.changed.startswith("slice [")
    assert "as a tensor" in p.hint


def test_branch_is_explained_at_the_branch_taken():
    script, (p,) = recompilation("branch")
    assert p.change_kind == "branch" and p.changed == "aten::relu → aten::sigmoid"
    assert p.line == marked_line(script, "# BRANCH-C")
    assert p.trigger_line == marked_line(script, "# TRIGGER")
    assert "torch.where" in p.hint and p.doc_url.endswith("/XLA404.md")
