"""XLA401, held-out 14 (airbench, modded-nanogpt): reads of CPU tensors are no device syncs —
``torch.arange`` sized by ``math.ceil(...)``, ``torch.from_numpy`` of NumPy data. A device
tensor read next to them is still reported."""

from tests.helpers import findings, src

CPU_READS = src("""
from math import ceil
import numpy as np
import torch
import torch.nn as nn

model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
steps = ceil(20 * 0.99)
decay = 0.95 * (torch.arange(steps + 1) / steps) ** 3
for step in range(1, steps + 1):
    loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    counts = torch.from_numpy(np.array([3, 1, 2]))
    total = counts.sum().item()
    rate = decay[step].item()
    print(loss.item())
""")


def test_cpu_tensors_read_on_the_host_are_no_syncs():
    lines = [
        CPU_READS.splitlines()[f.span.start.line].strip() for f in findings(CPU_READS, "XLA401")
    ]
    assert lines == ["print(loss.item())"]


EVAL_COPIES = src("""
import torch

def evaluate(model, loader, device):
    model.eval()
    y_true, y_pred = [], []
    for batch in loader:
        batch = batch.to(device)
        with torch.no_grad():
            pred = model(batch)
        y_true.append(batch.y.view(pred.shape).detach().cpu())
        y_pred.append(pred.detach().cpu())
    y_true = torch.cat(y_true, dim=0).numpy()
    y_pred = torch.cat(y_pred, dim=0).numpy()
    return {"y_true": y_true, "y_pred": y_pred}

def raw(model, loader, device):
    outs = []
    for batch in loader:
        outs.append(model(batch.to(device)))
    return torch.cat(outs).numpy()

model = torch.nn.Linear(4, 1).to("cuda")
""")


def test_a_list_of_host_copies_joined_then_read_is_no_crash():
    """ogb's ``eval`` (held-out 101): every prediction is appended as ``.detach().cpu()``,
    so ``torch.cat(y_pred).numpy()`` reads CPU tensors; the list of raw outputs is still
    a device tensor read with ``.numpy()``, which raises on XLA."""
    found = findings(EVAL_COPIES, "XLA401")
    lines = [EVAL_COPIES.splitlines()[f.span.start.line].strip() for f in found]
    assert lines == ["return torch.cat(outs).numpy()"]
