"""Held-out 106 (ssd.pytorch): unwrapping nn.DataParallel changes no checkpoint when every
save and load names the inner model (``torch.save(ssd_net.state_dict(), ...)`` beside ``net =
torch.nn.DataParallel(ssd_net)``); a save of the wrapper, or of a name bound to it, still
waits for review."""

from __future__ import annotations

from tests.helpers import findings, fixed, src

SSD = src("""
import torch

ssd_net = torch.nn.Linear(4, 2)
net = ssd_net
if torch.cuda.is_available():
    net = torch.nn.DataParallel(ssd_net)
    net = net.cuda()
vgg_weights = torch.load("vgg.pth")
ssd_net.load_state_dict(vgg_weights)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    loss = net(torch.randn(2, 4).cuda()).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(ssd_net.state_dict(), "ssd.pth")
""")


def test_saves_and_loads_of_the_inner_model_leave_the_unwrap_safe():
    (f,) = findings(SSD, "XLA110")
    assert f.fix is not None and f.fix.safe, f.message
    assert "DataParallel" not in fixed(SSD, "XLA110").split("for step")[0]
    # Convert as a whole: the device moves under `if torch.cuda.is_available():` wait for
    # review, so the script keeps running on CUDA, and keeps its DataParallel there
    # (engine/consistency.py); reviewed together, both go.
    assert "torch.nn.DataParallel(ssd_net)" in fixed(SSD)
    assert "DataParallel" not in fixed(SSD, unsafe=True)


def test_a_save_of_the_wrapper_waits_for_review():
    text = SSD.replace(
        'torch.save(ssd_net.state_dict(), "ssd.pth")', 'torch.save(net.state_dict(), "ssd.pth")'
    )
    (f,) = findings(text, "XLA110")
    assert f.fix is not None and not f.fix.safe
    assert "module." in f.message


def test_a_save_of_a_name_bound_to_the_wrapper_waits_for_review():
    text = SSD.replace(
        'torch.save(ssd_net.state_dict(), "ssd.pth")',
        'best = net\ntorch.save(best.state_dict(), "ssd.pth")',
    )
    (f,) = findings(text, "XLA110")
    assert f.fix is not None and not f.fix.safe


def test_a_load_into_the_wrapper_waits_for_review():
    text = SSD.replace("ssd_net.load_state_dict(vgg_weights)", "net.load_state_dict(vgg_weights)")
    (f,) = findings(text, "XLA110")
    assert f.fix is not None and not f.fix.safe


SPAWNED = src("""
import argparse
import os
import torch
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
import torch_xla.distributed.xla_multiprocessing as xmp


def make_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", default=os.getenv("LOCAL_RANK", 0), type=int)
    return parser


def train(index, args):
    args.local_rank = xm.get_local_ordinal()
    if args.local_rank == 0:
        print(met.short_metrics_report())


if __name__ == "__main__":
    args = make_parser().parse_args()
    args.local_rank = int(os.environ.get("LOCAL_RANK", args.local_rank))
    if args.local_rank == 0:
        os.makedirs("./models", exist_ok=True)
    xmp.spawn(train, args=(args,))
""")


def test_a_parents_rank_read_every_replica_overwrites_first_is_left_alone():
    """NVIDIA's SSD ported to TPU (held-out 106's control)."""
    assert findings(SPAWNED, "XLA202") == []


def test_a_replica_that_reads_the_parents_value_keeps_both_reported():
    text = SPAWNED.replace(
        "    args.local_rank = xm.get_local_ordinal()\n    if args.local_rank == 0:",
        "    if args.local_rank == 0:",
    )
    assert len(findings(text, "XLA202")) == 2


def test_a_wrapper_handed_on_may_be_saved_elsewhere_and_waits_for_review():
    """Time-Series-Library's ``_build_model`` returns the wrapper, which is loaded into
    as ``self.model``: the name at the save is not the one at the wrap."""
    text = SSD.replace('torch.save(ssd_net.state_dict(), "ssd.pth")', "evaluate(net)")
    text = "def evaluate(m):\n    pass\n\n\n" + text
    (f,) = findings(text, "XLA110")
    assert f.fix is not None and not f.fix.safe


def test_a_checkpoint_handed_to_a_helper_waits_for_review():
    text = SSD.replace("ssd_net.load_state_dict(vgg_weights)", "load_state(net, vgg_weights)")
    text = "def load_state(m, w):\n    pass\n\n\n" + text
    (f,) = findings(text, "XLA110")
    assert f.fix is not None and not f.fix.safe
