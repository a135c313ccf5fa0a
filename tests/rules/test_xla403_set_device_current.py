"""XLA403: ``torch.cuda.set_device(i)`` decides where index-less CUDA placements go. Removing it
alone while such a placement stays on CUDA (its XLA101 change waits for review) puts every
process on cuda:0 (FastPitch, held-out 39): the removal then waits for review too. An explicit
index, or a placement in the other branch of an ``if``, does not depend on it."""

from tests.helpers import findings

CODE = """
import torch
import torch.distributed as dist


def init_distributed(rank):
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("nccl")


def main(args, rank):
    init_distributed(rank)
    device = torch.device("cuda" if args.cuda else "cpu")
    model = models.get_model("FastPitch", args, device)
    return model
"""


def _set_device(code: str):
    (f,) = [f for f in findings(code, "XLA403") if "set_device" in f.message]
    return f


def test_an_index_less_placement_left_on_cuda_holds_the_removal_back():
    f = _set_device(CODE)
    assert f.fix is not None and not f.fix.safe
    assert "without an index" in f.fix.review_reason and "cuda:0" in f.fix.review_reason


def test_an_explicit_index_or_the_other_branch_does_not():
    explicit = CODE.replace('torch.device("cuda" if args.cuda else "cpu")', "rank")
    assert _set_device(explicit).fix.safe
    branches = """
    import torch

    def main(ddp, rank, flag):
        if ddp:
            torch.cuda.set_device(rank)
            device = f"cuda:{rank}"
        else:
            device = "cuda" if flag else "cpu"
            if device.startswith("cuda"):
                print("gpu")
        return torch.nn.Linear(4, 1).to(device)
    """
    assert _set_device(branches).fix.safe
