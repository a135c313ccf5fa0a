"""Code that never runs on an XLA host (held-out 77, WaveRNN): the body of ``if device.type ==
"cuda" ...:`` / ``if x.is_cuda:``, and what ``and`` short-circuits after such a test. XLA403 and
XLA118 do not ask to convert it; XLA101's review reason says what an enabled branch would
raise."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.helpers import findings, src

pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")

HELPERS = """
import torch


def data_parallel_workaround(model, *inputs):
    ids = list(range(torch.cuda.device_count()))
    replicas = torch.nn.parallel.replicate(model, ids)
    return torch.nn.parallel.parallel_apply(replicas, inputs)
"""

SCRIPT = """
import torch
from helpers import data_parallel_workaround

device = torch.device("cuda")
model = torch.nn.Linear(4, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(2, 4, device=device)
    if device.type == "cuda" and torch.cuda.device_count() > 1:
        y = data_parallel_workaround(model, x)
    else:
        y = model(x)
    if x.is_cuda:
        torch.cuda.synchronize()
    y.sum().backward()
    opt.step()
"""


def test_device_type_branches_are_not_asked_to_be_converted(tmp_path: Path):
    (tmp_path / "helpers.py").write_text(src(HELPERS))
    script = tmp_path / "train.py"
    text = src(SCRIPT)
    script.write_text(text)
    found = analyze(text, path=str(script)).findings
    lines = {(f.code, f.span.start.line + 1) for f in found}
    assert ("XLA118", 10) not in lines  # the DataParallel workaround never runs on XLA
    assert ("XLA403", 9) not in lines  # device_count() after ``device.type == "cuda" and``
    assert ("XLA403", 14) not in lines  # synchronize() under ``if x.is_cuda:``


def test_the_same_helper_called_unguarded_is_still_reported(tmp_path: Path):
    (tmp_path / "helpers.py").write_text(src(HELPERS))
    script = tmp_path / "train.py"
    text = src(SCRIPT).replace(
        'if device.type == "cuda" and torch.cuda.device_count() > 1:', "if True:"
    )
    script.write_text(text)
    found = analyze(text, path=str(script)).findings
    assert any(f.code == "XLA118" and f.span.start.line + 1 == 10 for f in found)


def test_reducing_a_test_to_the_flag_names_the_division_by_the_cuda_count():
    text = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--force_cpu", action="store_true")
    args = parser.parse_args()
    schedule = [(1, 32), (2, 64)]
    if not args.force_cpu and torch.cuda.is_available():
        device = torch.device("cuda")
        for _, batch_size in schedule:
            if batch_size % torch.cuda.device_count() != 0:
                raise ValueError("batch_size must divide evenly")
    else:
        device = torch.device("cpu")
    model = torch.nn.Linear(2, 2).to(device)
    """
    (f,) = [f for f in findings(text, "XLA101") if f.span.start.line + 1 == 8]
    assert not f.fix.safe
    assert "raises ZeroDivisionError there (torch.cuda.device_count() is 0)" in f.fix.review_reason
