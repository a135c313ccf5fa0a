"""The "no-xla" problem: a run that did no XLA work says so, at the line that picks the device."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from xla_lens.runner import RunOptions
from xla_lens.runner.cli import print_summary
from xla_lens.runner.events import Problem
from xla_lens.runner.no_xla import device_line

from .conftest import PYTHON, marked_line, of_type, run_collect

UNCONVERTED = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # DEVICE
model = nn.Linear(8, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(4, 8, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
"""

IMPORTS_ONLY = """\
import torch
import torch_xla

device = torch.device("cpu")  # DEVICE (the conversion was never finished)
print(torch.ones(2, device=device).sum().item())
"""


def _no_xla(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.kind == "no-xla"]


def test_an_unconverted_cuda_script_run_on_cpu_says_convert_it_first(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(UNCONVERTED)
    summary, events = run_collect(RunOptions(script, interpreter=PYTHON))
    assert summary.status == "ok" and summary.uncached_compiles == 0
    assert any("step 2 loss" in e.text for e in of_type(events, "output"))
    [problem] = _no_xla(summary.problems)
    assert (problem.file, problem.line) == (str(script), marked_line(script, "# DEVICE"))
    assert "never used the XLA device" in problem.message and "convert it first" in problem.message
    assert "never imported" in problem.message
    assert problem in of_type(events, "problem")  # streamed, not only in the summary
    out = io.StringIO()
    print_summary(summary, out, relative_to=str(tmp_path))
    assert "no-xla: this script never used the XLA device" in out.getvalue()


@pytest.mark.xla
def test_importing_torch_xla_without_using_the_device_is_no_xla_work(tmp_path: Path):
    script = tmp_path / "half_converted.py"
    script.write_text(IMPORTS_ONLY)
    summary, _ = run_collect(RunOptions(script, interpreter=PYTHON))
    assert summary.status == "ok"
    [problem] = _no_xla(summary.problems)
    assert problem.line == marked_line(script, "# DEVICE")
    assert "imported torch_xla but created no tensor" in problem.message


def test_a_script_without_torch_is_no_xla_work_and_points_at_line_1(tmp_path: Path):
    script = tmp_path / "plain.py"
    script.write_text("print('hello')\n")
    summary, _ = run_collect(RunOptions(script, interpreter=PYTHON))
    [problem] = _no_xla(summary.problems)
    assert problem.line == 1


def test_a_converted_script_that_crashes_before_its_xla_part_is_only_a_crash(tmp_path: Path):
    script = tmp_path / "early_crash.py"
    script.write_text("import sys\nsys.exit('bad arguments')\nimport torch_xla\n")
    summary, _ = run_collect(RunOptions(script, interpreter=PYTHON))
    assert summary.status == "failed" and _no_xla(summary.problems) == []


def test_an_unconverted_script_that_crashes_is_also_no_xla(tmp_path: Path):
    script = tmp_path / "cuda_only.py"
    script.write_text("x = 1\nraise RuntimeError('Torch not compiled with CUDA enabled')\n")
    summary, _ = run_collect(RunOptions(script, interpreter=PYTHON))
    assert summary.status == "failed"
    assert [p.kind for p in summary.problems] == ["crash", "no-xla"]


def test_a_cancelled_run_is_not_judged(tmp_path: Path):
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(30)\n")
    summary, _ = run_collect(RunOptions(script, interpreter=PYTHON, timeout=1, grace_s=0.5))
    assert summary.status == "timeout" and _no_xla(summary.problems) == []


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("import torch\nx = 1\nd = torch.device('cuda:0')\n", 3),
        ("import torch\nm = M()\nm.cuda()\n", 3),
        ("import torch\n# 'cuda' in a comment\ndev = 'cuda'\n", 3),
        ("import torch\nif torch.cuda.is_available():\n    pass\n", 2),
        ("import torch_xla\ndevice = torch_xla.device()\n", 2),
        ("print('no device here')\n", 1),
        ("def broken(:\n", 1),
    ],
)
def test_device_line(source: str, line: int):
    assert device_line(source) == line
