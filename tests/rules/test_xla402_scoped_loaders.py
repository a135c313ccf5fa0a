"""A loader name bound in several functions (held-out 54's benchmark: ``para_loader =
pl.ParallelLoader(train_loader, ...)`` in the training function, ``pl.ParallelLoader(test_loader,
...)`` in the benchmark): the training loop's name is its own function's binding, so the test
loader is no "training DataLoader"; a loader a script function returns is still followed."""

from tests.helpers import findings, src

BENCH = src("""
import torch
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset


def loaders():
    ds = TensorDataset(torch.randn(100, 4), torch.randn(100, 1))
    train_loader = DataLoader(ds, batch_size=16, drop_last=True)
    test_loader = DataLoader(ds, batch_size=16, drop_last=False)
    return train_loader, test_loader


def train(model, opt, train_loader, device):
    para_loader = pl.ParallelLoader(train_loader, [device])
    for x, y in para_loader.per_device_loader(device):
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def bench(model, test_loader, device):
    para_loader = pl.ParallelLoader(test_loader, [device])
    with torch.no_grad():
        for x, y in para_loader.per_device_loader(device):
            model(x)
""")


def test_the_test_loader_is_not_called_the_training_loader():
    line = next(i for i, t in enumerate(BENCH.splitlines()) if "test_loader = DataLoader" in t)
    at = [f for f in findings(BENCH, "XLA402") if f.span.start.line == line]
    assert all("the training DataLoader" not in f.message for f in at)


def test_a_loader_returned_by_a_function_is_followed():
    code = src("""
    import torch
    from torch.utils.data import DataLoader, TensorDataset


    def make_loader():
        loader = DataLoader(TensorDataset(torch.randn(100, 4)), batch_size=16)
        return loader


    def run(model, opt):
        loader = make_loader()
        for (x,) in loader:
            loss = model(x.cuda()).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)
    assert any("the training DataLoader" in f.message for f in findings(code, "XLA402"))
