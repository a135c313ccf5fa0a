"""Convert holds the MpDeviceLoader wrap (XLA106) back while no device move of the script
reaches XLA (held-out 146, CurricularFace: every ``.cuda(gpu)`` move waited for review behind
mp.spawn and DDP, and the safe loader wrap alone sent each batch CPU -> XLA -> CUDA, with an
XLA runtime in every CUDA worker)."""

from xla_lens.engine import fix_source

from tests.helpers import src

WORKER = """
import os
import torch
import torch.distributed as dist
import torchattacks
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl")
    model = torch.nn.Linear(4, 1).cuda()
    model = DDP(model, device_ids=[local_rank])
    attack = torchattacks.PGD(model, eps=8 / 255)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        adv = attack(x, y)
        loss = (model(adv) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_the_loader_wrap_waits_with_the_device_moves():
    out = fix_source(src(WORKER), target="modern")
    assert "torch.nn.Linear(4, 1).cuda()" in out.source  # the moves wait for review
    assert "MpDeviceLoader" not in out.source
    (held,) = [f for f in out.remaining if f.code == "XLA106"]
    assert "no device move of the script reached the XLA device" in held.fix.review_reason
    # Every fix together (`fix --unsafe-fixes`): the wrap goes in with the moves.
    assert "MpDeviceLoader" in fix_source(src(WORKER), target="modern", unsafe=True).source


CLOSURE = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def train(args, model, dataset, optimizer, writer):
    dist.init_process_group("nccl", rank=args.rank, world_size=args.world_size)
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset), batch_size=8)
    model = model.to(args.rank)
    for step, (x, y) in enumerate(loader):
        loss = model(x.to(args.rank), y.to(args.rank))
        writer.add_scalar("loss", loss.item(), step)
        loss.backward()
        optimizer.step()
"""


def test_a_step_closure_waits_with_the_loader_that_gave_its_loop_a_sync():
    # Held-out 165's clasp: the MpDeviceLoader (the loop's only sync) waited with the device,
    # while the report went into a step closure nothing would ever run: the loss was never
    # written. The closure waits too.
    out = fix_source(src(CLOSURE))
    assert out.error is None
    assert "add_step_closure" not in out.source
    assert out.source == src(CLOSURE)
