"""XLA106: a loop whose loader comes from a function of the same file that already hands out
an XLA device loader (``return pl.MpDeviceLoader(...)``, ``...per_device_loader(device)``,
also as one element of a returned tuple) is fed by that loader: wrapping it again makes the
inner loader thread fail and no step run. Only when every return is such a loader."""

from tests.helpers import findings, src

FACTORY = """
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader


def build_batches(data, bs):
    plain = DataLoader(data, batch_size=bs)
    dev = torch_xla.device()
    plain = pl.ParallelLoader(plain, [dev]).per_device_loader(dev)
    return plain, len(data)


def make_stream(data, bs):
    return pl.MpDeviceLoader(DataLoader(data, batch_size=bs), torch_xla.device())


def worker(index, net, opt, data):
    for epoch in range(3):
        batch_loader, count = build_batches(data, 16)
        for inp, tgt in batch_loader:
            net(inp).sub(tgt).abs().mean().backward()
            xm.optimizer_step(opt)
        stream_loader = make_stream(data, 16)
        for inp, tgt in stream_loader:
            net(inp).sub(tgt).abs().mean().backward()
            xm.optimizer_step(opt)


if __name__ == "__main__":
    torch_xla.launch(worker)
"""


def test_a_loader_every_return_of_its_factory_makes_an_xla_loader_is_not_reported():
    assert findings(FACTORY, "XLA106") == []


def test_a_factory_that_may_also_return_a_plain_loader_is_still_reported():
    code = src(FACTORY).replace(
        "    return pl.MpDeviceLoader(",
        "    if bs > 8:\n        return DataLoader(data)\n    return pl.MpDeviceLoader(",
    )
    (f,) = findings(code, "XLA106")
    assert src(code).splitlines()[f.span.start.line].strip() == "for inp, tgt in stream_loader:"
    assert not f.fix.safe


def test_a_loader_wrapped_only_under_a_condition_in_its_factory_is_still_reported():
    code = src(FACTORY).replace(
        "    plain = pl.ParallelLoader(", "    if bs > 8:\n        plain = pl.ParallelLoader("
    )
    (f,) = findings(code, "XLA106")
    assert src(code).splitlines()[f.span.start.line].strip() == "for inp, tgt in batch_loader:"
