"""XLA202, held-out 14 (vicreg): a torchrun sentinel whose branch is the only way through
(it sets ``args.rank``... and the else returns) is True under ``torchrun --nproc_per_node=1``;
rewritten as ``xr.world_size() > 1`` it is False on one XLA device. The review note says so."""

from tests.helpers import findings, src

SETUP = src("""
import os
import torch.distributed as dist

def init_distributed_mode(args):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args.rank = int(os.environ["RANK"])
        args.world_size = int(os.environ["WORLD_SIZE"])
    else:
        print("Not using distributed mode")
        return
    dist.init_process_group(backend="nccl", world_size=args.world_size, rank=args.rank)
""")


def test_the_single_device_path_is_named_in_the_review_note():
    (f,) = [f for f in findings(SETUP, "XLA202") if "asks whether torchrun" in f.message]
    assert f.fix is not None and not f.fix.safe
    assert "single XLA device" in f.fix.review_reason
    assert "args.rank, args.world_size" in f.fix.review_reason
    assert "single XLA device" in f.message


def test_an_else_that_carries_on_gets_no_such_note():
    carries_on = SETUP.replace(
        '        print("Not using distributed mode")\n        return\n',
        "        args.rank, args.world_size = 0, 1\n",
    )
    for f in findings(carries_on, "XLA202"):
        assert f.fix is None or "single XLA device" not in f.fix.review_reason
