"""Held-out 137 (adversarial training, distillation): safe fixes that broke working scripts
while another fix of the same script waited for review, and a sync in an attack loop."""

from xla_lens.engine import fix_source

from tests.helpers import findings, fixed, src

PGD = """
import torch
import torch.nn as nn

def attack_pgd(model, X, y, epsilon, alpha, attack_iters):
    max_loss = torch.zeros(y.shape[0]).cuda()
    delta = torch.zeros_like(X).cuda()
    delta.requires_grad = True
    for _ in range(attack_iters):
        loss = nn.functional.cross_entropy(model(X + delta), y)
        loss.backward()
        delta.data = (delta + alpha * delta.grad.sign()).clamp(-epsilon, epsilon)
        delta.grad.zero_()
    return delta.detach(), max_loss

def main(loader):
    model = nn.Linear(4, 3).cuda()
    model = nn.DataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for X, y in loader:
        X, y = X.cuda(), y.cuda()
        delta, _ = attack_pgd(model, X, y, 0.1, 0.01, 10)
        loss = nn.functional.cross_entropy(model(X + delta), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_an_allocation_on_a_site_whose_move_waits_waits_too():
    # DataParallel stays (its removal waits for review), so every .cuda() stays; allocating
    # `max_loss` alone on the XLA device mixed devices at the first step.
    (alloc,) = findings(PGD, "XLA112")
    assert alloc.fix is not None and not alloc.fix.safe
    assert "whose fix waits for review" in alloc.fix.review_reason
    out = fixed(PGD)
    assert "torch.zeros(y.shape[0]).cuda()" in out and "torch_xla.device()" not in out


def test_a_backward_loop_in_a_helper_the_step_calls_is_part_of_that_step():
    syncs = findings(PGD, "XLA107")
    assert [f.span.start.line for f in syncs] == [18]  # the training loop only, not the attack's
    alone = PGD.replace("        opt.step()\n", "").replace("        opt.zero_grad()\n", "")
    alone = alone.replace("    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n", "")
    # Nothing around the attack updates parameters: its loop is the step loop itself.
    assert [f.span.start.line for f in findings(alone, "XLA107")] == [7, 17]


DDP = """
import os
import torch
import torch.distributed as dist
import torchattacks
from torch.nn.parallel import DistributedDataParallel as DDP

def main(loader):
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl")
    model = torch.nn.Linear(4, 1).cuda()
    model = DDP(model, device_ids=[local_rank])
    attack = torchattacks.PGD(model, eps=8 / 255)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        adv = attack(x, y)
        loss = (model(adv) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

if __name__ == "__main__":
    main(None)
"""


def test_device_moves_wait_while_ddp_stays_set_up_for_cuda():
    # DDP's device_ids moved the inputs of forwards this file does not show (torchattacks):
    # dropping them waits for review, so the wrap keeps naming CUDA.
    ddp = [f for f in findings(DDP, "XLA205") if "names a CUDA device" in f.message]
    assert ddp and not ddp[0].fix.safe
    out = fix_source(src(DDP), target="modern")
    assert "model = torch.nn.Linear(4, 1).cuda()" in out.source
    assert "device_ids=[local_rank]" in out.source and "torch_xla.device()" not in out.source
    held = [f for f in out.remaining if f.code == "XLA101"]
    assert held and all("Convert held the device moves back" in f.fix.review_reason for f in held)
    # Every fix applied together (`fix --unsafe-fixes`): the wrap and the moves go as one.
    both = fix_source(src(DDP), target="modern", unsafe=True).source
    assert "device_ids" not in both and ".cuda()" not in both
