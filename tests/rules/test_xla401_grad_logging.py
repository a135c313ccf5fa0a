"""XLA401: a gradient handed to a summary writer is read on the host every step (held-out 16,
pytorch-cifar100: `writer.add_scalar(..., para.grad.norm(), n_iter)`, measured 2 extra graph
executions per step)."""

from tests.helpers import findings


def test_a_logged_gradient_norm_is_a_host_read():
    code = """
    import torch
    import torch_xla
    from torch.utils.tensorboard import SummaryWriter
    net = torch.nn.Linear(4, 2).to(torch_xla.device())
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    writer = SummaryWriter()
    for step in range(10):
        loss = net(torch.randn(8, 4, device=torch_xla.device())).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        for name, para in net.named_parameters():
            writer.add_scalar("grad/" + name, para.grad.norm(), step)
        torch_xla.sync()
    """
    (f,) = findings(code, "XLA401")
    assert f.span.start.line + 1 == 13 and "logging call" in f.message


def test_a_gradient_test_reads_no_data():
    code = """
    import torch
    import torch_xla
    net = torch.nn.Linear(4, 2).to(torch_xla.device())
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in range(10):
        loss = net(torch.randn(8, 4, device=torch_xla.device())).sum()
        loss.backward()
        if net.weight.grad is not None:
            opt.step()
        torch_xla.sync()
    """
    assert findings(code, "XLA401") == [] and findings(code, "XLA404") == []
