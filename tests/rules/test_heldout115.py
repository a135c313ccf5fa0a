"""Held-out 115 (pytorch-maml): the optimizer is built before a class of another module
moves its model to the device, which XLA109 cannot reorder. As written an XLA host trains on
the CPU; Convert's safe picker fix made it train on XLA with a stale optimizer (the model
never changed, no error). While such an XLA109 error stands, XLA101's fixes wait for review."""

from __future__ import annotations

from pathlib import Path

from xla_lens.engine.analysis import analyze

from tests.helpers import findings, src

LEARNER = src("""
class MetaLearner:
    def __init__(self, model, optimizer, device):
        self.model = model.to(device)
        self.optimizer = optimizer
""")

TRAIN = src("""
import argparse
import torch
from maml import MetaLearner

parser = argparse.ArgumentParser()
parser.add_argument("--use-cuda", action="store_true")
args = parser.parse_args()
device = torch.device("cuda" if args.use_cuda and torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
learner = MetaLearner(model, optimizer, device=device)
""")


def _analysis(root: Path, text: str):
    (root / "maml.py").write_text(LEARNER)
    script = root / "train.py"
    script.write_text(text)
    return analyze(text, str(script))


def test_the_device_fix_waits_while_the_optimizer_is_built_before_the_move(tmp_path):
    found = _analysis(tmp_path, TRAIN).findings
    (stale,) = [f for f in found if f.code == "XLA109"]
    assert stale.fix is None or not stale.fix.safe
    (picker,) = [f for f in found if f.code == "XLA101" and f.span.start.line == 7]
    assert picker.fix is not None and not picker.fix.safe
    assert "XLA109" in picker.fix.review_reason and "line 10" in picker.fix.review_reason


def test_with_the_model_moved_first_the_device_fix_is_safe_again(tmp_path):
    text = TRAIN.replace(
        "model = torch.nn.Linear(2, 2)\n", "model = torch.nn.Linear(2, 2).to(device)\n"
    )
    found = _analysis(tmp_path, text).findings
    assert [f for f in found if f.code == "XLA109"] == []
    (picker,) = [f for f in found if f.code == "XLA101" and f.span.start.line == 7]
    assert picker.fix is not None and picker.fix.safe


L2L = src("""
import torch
import cherry


def main(rank):
    device = torch.device("cuda")
    model = torch.nn.Linear(2, 2)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), 0.001)
    opt = cherry.optim.Distributed(model.parameters(), opt=opt, sync=1)
    for step in range(3):
        opt.zero_grad()
        model(torch.randn(4, 2, device=device)).sum().backward()
        opt.step()


if __name__ == "__main__":
    torch.distributed.init_process_group("gloo", init_method="file:///tmp/init", rank=0, world_size=2)
    main(torch.distributed.get_rank())
""")


def test_gloo_under_an_optimizer_wrapper_that_all_reduces_is_reported():
    """learn2learn's distributed MAML: gloo's all_reduce of XLA tensors returns without
    reducing (measured: two processes kept 1.0 and 2.0), so cherry's averaging does nothing."""
    (f,) = [f for f in findings(L2L, "XLA205") if "gloo" in f.message]
    assert "cherry.optim.Distributed" in f.message and "line 10" in f.message
    assert f.fix is not None and not f.fix.safe


def test_gloo_with_nothing_that_reduces_device_tensors_is_left_alone():
    plain = L2L.replace(
        "    opt = cherry.optim.Distributed(model.parameters(), opt=opt, sync=1)\n", ""
    )
    assert [f for f in findings(plain, "XLA205") if "gloo" in f.message] == []


def test_an_all_reducing_optimizer_wrapper_owns_the_step():
    """cherry's Distributed optimizer all-reduces the gradients itself: xm.optimizer_step
    would reduce them a second time, and nothing is missing for XLA105 to add."""
    assert findings(L2L, "XLA105") == []
    launch = [f for f in findings(L2L, "XLA204")]
    assert all("nothing visible all-reduces" not in f.message for f in launch)
