"""XLA401 stays quiet on a name rebound to a float by ``.item() / world_size`` and on the
CPU copy of a module (a model snapshot, not a tensor read)."""

from tests.helpers import findings

REBOUND = """
import torch
import torch.distributed as dist

device = torch.device("cuda")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        avg_loss = loss.detach().clone()
        dist.all_reduce(avg_loss)
        avg_loss = avg_loss.item() / dist.get_world_size()
        print(f"step {step} loss {avg_loss:.4f}")
"""


def test_a_name_rebound_by_item_over_the_world_size_is_a_float():
    found = findings(REBOUND, "XLA401")
    lines = [f.span.start.line for f in found]
    assert 13 in lines  # the .item() itself is the read
    assert 14 not in lines


def test_dividing_by_a_tensor_keeps_it_a_tensor():
    code = REBOUND.replace("dist.get_world_size()", "loss")
    assert 14 in [f.span.start.line for f in findings(code, "XLA401")]


SNAPSHOT = """
import copy
import pickle
import torch

device = torch.device("cuda")
net = torch.nn.Linear(4, 1).to(device)
ema = copy.deepcopy(net)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(1000):
    loss = net(torch.randn(8, 4, device=device)).pow(2).mean()
    loss.backward()
    opt.step()
    if step % 500 == 0:
        snap = copy.deepcopy(ema).eval().requires_grad_(False).cpu()
        pickle.dump(snap, open("snap.pkl", "wb"))
        net.cpu()
        weights = net.weight.cpu()
"""


def test_the_cpu_copy_of_a_module_is_not_a_tensor_read():
    found = findings(SNAPSHOT, "XLA401")
    assert [f.span.start.line for f in found] == [16]  # net.weight.cpu() is a tensor


def test_a_read_under_a_periodic_test_is_not_every_step():
    found = findings(REBOUND, "XLA401")
    (item,) = [f for f in found if f.span.start.line == 13]
    assert "every step that runs the periodic block on line 11" in item.message
    code = REBOUND.replace("    if step % 10 == 0:\n", "    if True:\n")
    (item,) = [f for f in findings(code, "XLA401") if f.span.start.line == 13]
    assert item.message.endswith("an extra sync every step")
