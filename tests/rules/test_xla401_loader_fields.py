"""XLA401: evaluation-loop reads of batch fields the loop never moves are CPU reads (held-out
17, BLIP's evaluate: `img_id.item()` on the ids of a plain DataLoader)."""

from tests.helpers import findings

EVALUATE = """
import torch
import torch_xla

def train(net, loader, sgd, device):
    for image, target in loader:
        image, target = image.to(device), target.to(device)
        loss = torch.nn.functional.cross_entropy(net(image), target)
        sgd.zero_grad()
        loss.backward()
        sgd.step()
        torch_xla.sync()

@torch.no_grad()
def evaluate(net, loader, device):
    out = []
    for image, ids in loader:
        image = image.to(device)
        scores = net(image)
        for score, uid in zip(scores, ids):
            out.append({"id": uid.item(), "score": score.item()})
    return out

def main():
    device = torch_xla.device()
    net = torch.nn.Linear(4, 3).to(device)
    ds = torch.utils.data.TensorDataset(torch.randn(8, 4), torch.arange(8))
    sgd = torch.optim.SGD(net.parameters(), lr=0.1)
    train(net, torch.utils.data.DataLoader(ds, batch_size=4), sgd, device)
    print(evaluate(net, torch.utils.data.DataLoader(ds, batch_size=4), device))
"""


def test_a_field_the_loop_never_moves_is_a_cpu_read_and_a_model_output_is_not():
    found = [f for f in findings(EVALUATE, "XLA401") if "evaluation loop" in f.message]
    assert [f.span.start.line + 1 for f in found] == [20]
    assert "score.item()" in EVALUATE.splitlines()[20]


def test_the_same_field_moved_by_the_loop_is_a_device_read():
    moved = EVALUATE.replace(
        "image = image.to(device)", "image, ids = image.to(device), ids.to(device)"
    )
    found = [f for f in findings(moved, "XLA401") if "evaluation loop" in f.message]
    assert len(found) == 2
