"""XLA107 and XLA403's timer wait: a ``torch.cuda.synchronize()`` before a clock read that runs
on every iteration after the step becomes ``torch_xla.sync()`` + ``xm.wait_device_ops()``, the
loop's per-step sync; XLA107 adds no second one (held-out re-measure n5: two syncs per step)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from xla_lens.engine import fix_source

from tests.helpers import findings, src

TIMED = """
import time
import torch

dev = "cuda"
net = torch.nn.Linear(8, 2).to(dev)
sgd = torch.optim.SGD(net.parameters(), lr=0.05)
batches = [torch.randn(4, 8) for _ in range(STEPS)]
for i, xb in enumerate(batches):
    began = time.perf_counter()
    out = net(xb.to(dev)).pow(2).mean()
    sgd.zero_grad()
    out.backward()
    sgd.step()
    torch.cuda.synchronize()
    took = time.perf_counter() - began
    print("step", i, took >= 0)
print("iterations", len(batches))
"""


def _loop_syncs(code: str) -> int:
    out = fix_source(src(code)).source
    body = out.split("for i, xb in enumerate(batches):\n", 1)[1].split("\nprint(", 1)[0]
    return body.count("torch_xla.sync()")


def test_an_every_iteration_timer_wait_after_the_step_is_the_loops_sync():
    assert findings(TIMED, "XLA107") == []
    (wait,) = [f for f in findings(TIMED, "XLA403") if "synchronize" in f.message]
    assert wait.fix.safe
    assert _loop_syncs(TIMED) == 1


def test_in_a_with_block_it_counts_too():
    code = TIMED.replace(
        "    torch.cuda.synchronize()\n    took",
        "    with guard():\n        torch.cuda.synchronize()\n        took",
    )
    assert findings(code, "XLA107") == []


def test_a_wait_on_some_iterations_only_leaves_xla107():
    code = TIMED.replace(
        "    torch.cuda.synchronize()\n    took = time.perf_counter() - began\n",
        "    if i % 10 == 0:\n        torch.cuda.synchronize()\n        took = time.perf_counter() - began\n",
    )
    (f,) = findings(code, "XLA107")
    assert f.fix is not None and f.fix.safe


def test_a_wait_before_the_step_or_after_a_continue_leaves_xla107():
    before = TIMED.replace(
        "    torch.cuda.synchronize()\n    took = time.perf_counter() - began\n", ""
    ).replace(
        "    began = time.perf_counter()\n",
        "    torch.cuda.synchronize()\n    began = time.perf_counter()\n",
    )
    assert len(findings(before, "XLA107")) == 1
    skipping = TIMED.replace(
        "    sgd.step()\n", "    sgd.step()\n    if i % 2:\n        continue\n"
    )
    assert len(findings(skipping, "XLA107")) == 1


def test_a_synchronize_not_followed_by_a_clock_read_is_not_the_loops_sync():
    # XLA403 removes it: the loop needs XLA107's sync.
    code = TIMED.replace("    took = time.perf_counter() - began\n", "").replace("took >= 0", "0")
    assert len(findings(code, "XLA107")) == 1
    assert _loop_syncs(code) == 1


@pytest.mark.xla
def test_the_converted_timed_loop_runs_one_graph_per_step(tmp_path: Path):
    steps = 6
    out = fix_source(src(TIMED.replace("STEPS", str(steps)))).source
    assert "cuda" not in out and out.count("torch_xla.sync()") == 1, out
    script = tmp_path / "timed.py"
    script.write_text(
        out + "import torch_xla.debug.metrics as _met\n"
        "xm.wait_device_ops()\n"
        'print("executions", _met.counter_value("ExecuteComputation"))\n'
        'print("marks", _met.counter_value("MarkStep"))\n'
        'print("compiles", _met.metric_data("CompileTime")[0])\n'
        'print("exec_samples", _met.metric_data("ExecuteTime")[0])\n'
    )
    env = {**os.environ, "PJRT_DEVICE": "CPU", "CUDA_VISIBLE_DEVICES": ""}
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    got = dict(line.split() for line in run.stdout.splitlines() if line.count(" ") == 1)
    assert got["iterations"] == str(steps)
    assert got["executions"] == str(steps), got  # one graph execution per step
    assert got["marks"] == str(steps), got  # one sync per step
    # The step's graph compiles once, plus at most one for the first step's fresh optimizer state.
    assert int(got["compiles"]) <= 2, got


def test_a_timer_wait_xla403_is_told_to_ignore_is_not_the_loops_sync():
    code = TIMED.replace(
        "    torch.cuda.synchronize()\n",
        "    torch.cuda.synchronize()  # xla-lens: ignore[XLA403]\n",
    )
    assert len(findings(code, "XLA107")) == 1
