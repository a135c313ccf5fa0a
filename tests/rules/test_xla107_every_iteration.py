"""XLA107: the sync it adds must run on every iteration. A held-out miss (EDM-style): the
body ends in a once-per-tick block that most iterations skip with `continue`; a sync appended
at the end ran once per tick, and the graph grew across the skipped steps."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import fix_source

from tests.helpers import findings, fixed, run_counting_executions, src

TICKS = """
import torch

device = torch.device("cuda")
net = torch.nn.Linear(3, 2).to(device)
optim = torch.optim.Adam(net.parameters(), lr=1e-3)
it = 0
while True:
    batch = torch.rand(4, 3, device=device)
    err = net(batch).abs().mean()
    optim.zero_grad()
    err.backward()
    optim.step()
    it += 1
    last = it >= 60
    if not last and it % 20 != 0:
        continue
    print("report", it)
    if last:
        break
print("iterations", it)
"""


def test_the_sync_goes_before_a_continue_that_skips_the_end_of_the_body():
    (f,) = findings(TICKS, "XLA107")
    assert f.fix is not None and f.fix.safe
    out = fixed(TICKS, "XLA107")
    assert "    last = it >= 60\n    torch_xla.sync()\n    if not last and it % 20 != 0:\n" in out
    assert out.count("torch_xla.sync()") == 1
    assert "line 15" in f.fix.title  # names the `continue` it must precede
    # Nothing of the user's moved: only the sync line was added.
    assert out.replace("    torch_xla.sync()\n", "").replace("import torch_xla\n", "") == src(TICKS)


def test_accumulation_by_continue_syncs_every_micro_step():
    code = """
    import torch
    for i, (x, y) in enumerate(loader):
        loss = crit(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum != 0:
            continue
        opt.step()
        opt.zero_grad()
    """
    out = fixed(code, "XLA107")
    # Every iteration reaches the sync; the step it precedes joins the next iteration's graph.
    assert "    loss.backward()\n    torch_xla.sync()\n    if (i + 1) % accum" in out


def test_exits_before_the_step_in_inner_loops_or_in_handlers_keep_the_sync_at_the_end():
    code = """
    import torch
    for x in loader:
        if x is None:
            continue
        try:
            loss = model(x).sum()
        except ValueError:
            continue
        loss.backward()
        for p in model.parameters():
            if p.grad is None:
                continue
            p.grad.clamp_(-1, 1)
        opt.step()
        log(loss)
    """
    (f,) = findings(code, "XLA107")
    assert f.fix.safe
    assert fixed(code, "XLA107").endswith("    log(loss)\n    torch_xla.sync()\n")


def test_no_point_every_stepping_iteration_reaches_is_for_review():
    # The step and the `continue` share one statement: no line of the body runs after the
    # step on every iteration, so a sync at the end is skipped whenever `bad` is true.
    code = """
    import torch
    for x in loader:
        with ctx():
            model(x).sum().backward()
            if bad(x):
                continue
            opt.step()
        log()
    """
    (f,) = findings(code, "XLA107")
    assert f.fix is not None and not f.fix.safe
    assert "the `continue` on line 6" in f.fix.review_reason
    assert "torch_xla.sync()" not in fixed(code, "XLA107")
    assert "    log()\n    torch_xla.sync()\n" in fixed(code, "XLA107", unsafe=True)


def test_a_break_ends_the_loop_so_it_moves_nothing():
    # A break skips one sync, on the last iteration, and nothing grows after it; the exit
    # checks that end the body get the sync before them (the last step's closures run).
    code = """
    import torch
    for step, x in enumerate(loader):
        model(x).sum().backward()
        opt.step()
        if step >= max_steps:
            log("done")
            break
        log(step)
        if step % 100 == 0:
            continue
    """
    out = fixed(code, "XLA107")
    assert "    log(step)\n    torch_xla.sync()\n    if step % 100 == 0:\n" in out


@pytest.mark.xla
def test_the_converted_tick_loop_executes_one_graph_per_iteration(tmp_path: Path):
    out = fix_source(src(TICKS)).source
    assert "torch_xla.sync()" in out and "cuda" not in out, out
    script = tmp_path / "ticks.py"
    script.write_text(out)
    lines = run_counting_executions(script)
    assert lines["iterations"] == "60"
    assert lines["executions"] == "60", lines  # one graph per iteration
    # The sync appended at the end of the body, as before: the reports' iterations only.
    tail = tmp_path / "tail.py"
    tail.write_text(
        out.replace("    torch_xla.sync()\n", "").replace(
            "    if last:\n", "    torch_xla.sync()\n    if last:\n"
        )
    )
    assert run_counting_executions(tail)["executions"] == "3"
