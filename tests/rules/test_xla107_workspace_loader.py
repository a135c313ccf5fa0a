"""A loop of a script written for XLA pulls its batches from what a function of another
module hands out, and that function wraps its loader in ``pl.MpDeviceLoader`` (held-out 66's
timm-face TPU script: ``dloader, n = create_train_dloader(..., device=device)`` then
``next(dloader)``): the loader syncs every iteration, so the loop needs no sync of its own."""

from pathlib import Path

import pytest
from xla_lens.engine.analysis import analyze

from tests.helpers import src

pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")

DATA = """
import itertools

from torch.utils.data import DataLoader


def make_loader(dataset, batch_size, device):
    loader = DataLoader(dataset, batch_size, shuffle=True, drop_last=True)
    if device.type == "xla":
        import torch_xla.distributed.parallel_loader as pl

        loader = pl.MpDeviceLoader(loader, device)
    return itertools.cycle(loader), len(dataset)
"""

SCRIPT = """
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
from torch_xla.amp import syncfree

from data import make_loader


def main(index):
    device = torch_xla.device()
    model = torch.nn.Linear(4, 1).to(device)
    optim = syncfree.SGD(model.parameters(), lr=0.1)
    loader, size = make_loader(DATASET, 8, device)
    step = 0
    while step < 100:
        x, y = next(loader)
        torch.nn.functional.mse_loss(model(x), y).backward()
        xm.optimizer_step(optim)
        optim.zero_grad()
        step += 1


if __name__ == "__main__":
    xmp.spawn(main)
"""


def _syncs(tmp_path: Path, data: str) -> list:
    (tmp_path / "data.py").write_text(src(data), encoding="utf-8")
    script = tmp_path / "train_xla.py"
    script.write_text(src(SCRIPT), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    return [f for f in result.findings if f.code == "XLA107"]


def test_a_loop_fed_by_a_workspace_function_that_builds_an_xla_loader_needs_no_sync(
    tmp_path: Path,
):
    assert _syncs(tmp_path, DATA) == []


def test_a_workspace_function_that_builds_a_plain_loader_leaves_the_finding(tmp_path: Path):
    plain = DATA.replace("loader = pl.MpDeviceLoader(loader, device)", "pass")
    (f,) = _syncs(tmp_path, plain)
    assert "never marks the step" in f.message
