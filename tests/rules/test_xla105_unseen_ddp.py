"""XLA105 where the model may be wrapped in DDP by code xla-lens cannot see
(``task.prepare_distributed(device_ids=[device])`` of an installed package, timm's training
tasks): over the xla backend DDP already all-reduces in backward, and xm.optimizer_step would
all-reduce every gradient a second time each step. The rewrite waits for review and says so."""

from tests.helpers import findings, fixed

CODE = "XLA105"

UNSEEN = """
import torch
from mypkg.tasks import ClassificationTask


def main(distributed, device, loader):
    model = torch.nn.Linear(8, 2).to(device)
    task = ClassificationTask(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if distributed:
        task.prepare_distributed(device_ids=[device])
    for x, y in loader:
        loss = task(x.to(device), y.to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
"""

# The model goes through a library call named like a DDP wrapper.
UNSEEN_WRAPPER = """
import torch
import torch.distributed as dist
from mylib.parallel import wrap_distributed


def main(device, loader):
    dist.init_process_group("nccl")
    model = torch.nn.Linear(8, 2).to(device)
    model = wrap_distributed(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
"""


def test_device_ids_handed_to_unseen_code_makes_the_fix_a_review():
    (f,) = findings(UNSEEN, CODE)
    assert f.fix is not None and not f.fix.safe
    assert "task.prepare_distributed" in f.fix.review_reason
    assert "second time" in f.fix.review_reason
    assert "opt.step()" in fixed(UNSEEN, CODE)  # not applied as safe


def test_unseen_ddp_named_wrapper_makes_the_fix_a_review():
    (f,) = findings(UNSEEN_WRAPPER, CODE)
    assert f.fix is not None and not f.fix.safe
    assert "wrap_distributed" in f.fix.review_reason


def test_no_device_ids_no_wrapper_stays_safe():
    code = UNSEEN.replace("task.prepare_distributed(device_ids=[device])", "task.cuda()")
    (f,) = findings(code, CODE)
    assert f.fix is not None and f.fix.safe
