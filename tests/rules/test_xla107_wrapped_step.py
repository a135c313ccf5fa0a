"""XLA107 where the training step is a wrapper method (``opt.step_and_update_lr()`` of an
LR-schedule class that calls its optimizer's ``step()``): the batch loop that calls it is the
step loop; the epoch loop around the epoch function is not (no second sync per epoch), and an
evaluation helper the epoch loop calls is not read "every step"."""

from tests.helpers import findings, fixed

EPOCHS = """
import torch
import torch.nn as nn

class Wrap:
    def __init__(self, o):
        self._o = o
    def step_and_update_lr(self):
        self._o.step()
    def zero_grad(self):
        self._o.zero_grad()

def train_epoch(model, batches, opt, device):
    total = 0.0
    for x in batches:
        x = x.to(device)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step_and_update_lr()
        total += loss.item()
    return total / len(batches)

def eval_epoch(model, batches, device):
    total = 0.0
    with torch.no_grad():
        for x in batches:
            total += model(x.to(device)).pow(2).mean().item()
    return total / len(batches)

def main():
    device = torch.device("cuda")
    model = nn.Linear(8, 1).to(device)
    opt = Wrap(torch.optim.SGD(model.parameters(), lr=0.1))
    batches = [torch.randn(4, 8) for _ in range(10)]
    for epoch in range(3):
        tr = train_epoch(model, batches, opt, device)
        va = eval_epoch(model, batches, device)
        print(epoch, tr, va)
"""


def test_only_the_batch_loop_is_the_step_loop():
    assert [f.span.start.line for f in findings(EPOCHS, "XLA107")] == [13]  # 0-based


def test_epoch_loop_gets_no_sync():
    out = fixed(EPOCHS, "XLA107")
    assert out.count("torch_xla.sync()") == 1
    body = out.split("for x in batches:")[1].split("return total")[0]
    assert "torch_xla.sync()" in body


def test_one_host_read_finding_per_eval_read():
    lines = [f.span.start.line for f in findings(EPOCHS, "XLA401")]
    assert lines.count(26) == 1  # 0-based
