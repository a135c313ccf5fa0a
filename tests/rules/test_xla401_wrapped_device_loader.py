"""XLA401 on a script already written for XLA whose loop draws from a progress bar bound to a
name over ParallelLoader's per-device loader (``pbar = tqdm(para_loader.per_device_loader(d))``
then ``for batch in pbar``): the loader syncs every step — the fix was held back with
"nothing in this loop syncs" (a TPU training script probed as an already-XLA control, stop
29), which was untrue. The step-closure fix still waits for review there, for another reason:
the script was written for XLA, and Convert rewrote its logging (held-out 85 and 88)."""

import pytest
from xla_lens.engine import analyze

from tests.helpers import src

SCRIPT = """
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from tqdm import tqdm


def train(model, loader, opt, device):
    para_loader = pl.ParallelLoader(loader, [device])
    pbar = WRAPPED
    for batch in pbar:
        loss = model(batch).sum()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        print(loss.item())
"""


def _read(wrapped: str):
    found = analyze(src(SCRIPT.replace("WRAPPED", wrapped)), "train.py").findings
    (read,) = [f for f in found if f.code == "XLA401"]
    return read


@pytest.mark.parametrize(
    "wrapped",
    [
        "tqdm(para_loader.per_device_loader(device))",
        "enumerate(para_loader.per_device_loader(device))",
        "tqdm(enumerate(para_loader.per_device_loader(device)), total=10)",
    ],
)
def test_a_named_progress_bar_over_the_device_loader_syncs_each_step(wrapped: str) -> None:
    read = _read(wrapped)
    assert read.fix is not None and not read.fix.safe
    assert "nothing in this loop syncs" not in read.message
    assert read.fix.review_reason.startswith("the script was written for XLA")


def test_a_progress_bar_over_a_plain_loader_still_syncs_nothing() -> None:
    read = _read("tqdm(loader)")
    # Nothing syncs and no fix would add a sync: a closure would never run, so none is
    # offered (held-out 109).
    assert read.fix is None and "Nothing in this loop syncs" in (read.manual or "")
