"""A loader chosen in a conditional expression (held-out 154's splice_wave control:
``self.train_device_loader = pl.MpDeviceLoader(loader, self.device) if self.xla else loader``,
iterated as ``self.train_device_loader if train else self.test_device_loader``): an XLA loader
on either side is the script's own XLA path, and wrapping it again ran zero steps with no
error. A choice between plain DataLoaders is still wrapped."""

from tests.helpers import findings, src

TRAINER = src("""
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


class Trainer:
    def __init__(self, model, train_set, test_set, use_xla):
        self.xla = use_xla
        self.parallel = use_xla and xm.xrt_world_size() > 1
        self.device = xm.xla_device() if use_xla else torch.device("cpu")
        self.model = model.to(self.device)
        sampler = torch.utils.data.distributed.DistributedSampler(
            train_set, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal()
        )
        train = torch.utils.data.DataLoader(
            train_set, batch_size=8, drop_last=True, sampler=sampler
        )
        test = torch.utils.data.DataLoader(test_set, batch_size=8, drop_last=True)
        self.train_loader = pl.MpDeviceLoader(train, self.device) if self.xla else train
        self.test_loader = pl.MpDeviceLoader(test, self.device) if self.xla else test
        self.optimizer = torch.optim.Adam(self.model.parameters())

    def loop(self, train):
        for i, (x, y) in enumerate(self.train_loader if train else self.test_loader):
            loss = (self.model(x) - y).pow(2).mean()
            if train:
                self.optimizer.zero_grad()
                loss.backward()
                xm.optimizer_step(self.optimizer) if self.parallel else self.optimizer.step()
""")


def test_a_loader_chosen_for_the_xla_device_is_not_wrapped_again():
    assert not findings(TRAINER, "XLA106")


def test_a_choice_between_plain_loaders_is_still_a_plain_loader():
    code = TRAINER.replace("pl.MpDeviceLoader(train, self.device) if self.xla else train", "train")
    code = code.replace("pl.MpDeviceLoader(test, self.device) if self.xla else test", "test")
    assert findings(code, "XLA107") or findings(code, "XLA106")
