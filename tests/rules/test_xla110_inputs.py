"""XLA110: nn.DataParallel scattered each forward's CPU batch onto the GPUs; unwrapped on
XLA nothing moves it, so the unwrap waits for review when a forward input may be on the CPU
(held-out 17, 3D-ResNets: the model was wrapped in a helper that returns it)."""

from tests.helpers import findings


def test_unwrap_waits_for_review_when_a_forward_input_is_not_moved():
    code = """
    import torch
    import torch.nn as nn
    def wrap(net, device):
        net = nn.DataParallel(net).to(device)
        return net
    def fit(batches, net, sgd, device):
        for x, y in batches:
            loss = nn.functional.cross_entropy(net(x), y.to(device))
            sgd.zero_grad()
            loss.backward()
            sgd.step()
    def main():
        device = torch.device("cuda")
        net = wrap(nn.Linear(4, 3), device)
        sgd = torch.optim.SGD(net.parameters(), lr=0.1)
        fit([(torch.randn(8, 4), torch.randint(0, 3, (8,)))], net, sgd, device)
    """
    (f,) = [f for f in findings(code, "XLA110") if "DataParallel only knows" in f.message]
    assert "also moved each forward's inputs onto the device (line 8)" in f.message
    assert f.fix is not None and not f.fix.safe
    assert "nn.DataParallel moved the inputs" in f.fix.review_reason


def test_unwrap_stays_safe_when_every_input_is_moved():
    code = """
    import torch
    import torch.nn as nn
    device = torch.device("cuda")
    net = nn.DataParallel(nn.Linear(4, 3)).to(device)
    for x in [torch.randn(8, 4)]:
        x = x.to(device)
        out = net(x)
    """
    (f,) = findings(code, "XLA110")
    assert f.fix is not None and f.fix.safe, f.message


def test_a_certain_cpu_input_gets_its_own_finding():
    code = """
    import torch
    import torch.nn as nn
    net = nn.DataParallel(nn.Linear(4, 3)).cuda()
    out = net(torch.randn(8, 4))
    """
    found = findings(code, "XLA110")
    by_line = {f.span.start.line + 1: f for f in found}
    assert sorted(by_line) == [3, 4]
    assert "this input is a CPU tensor" in by_line[4].message
