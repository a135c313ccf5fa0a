"""Already-XLA control: a subclass overrides the train loop of a base class that lives in a
sibling module (as pytorch/xla's examples/train_resnet_amp.py does). The base class hands the
loop a pl.MpDeviceLoader, so the loop needs no sync and its loader no wrapping; the file
plainly drives XLA (step closures, an XLA autocast on torch_xla.device())."""

import itertools

import torch_xla
import torch_xla.core.xla_model as xm
from torch_xla.amp import autocast
from trainer_base import TrainerBase


class BF16Trainer(TrainerBase):
    def train_loop_fn(self, loader, epoch):
        self.model.train()
        loader = itertools.islice(loader, self.num_steps)
        for step, (data, target) in enumerate(loader):
            self.optimizer.zero_grad()
            with autocast(torch_xla.device()):
                loss = self.loss_fn(self.model(data), target)
            loss.backward()
            self.run_optimizer()
            if step % 10 == 0:
                xm.add_step_closure(self.log_step, args=(step, loss, epoch))


def _mp_fn(index):
    BF16Trainer().start_training()


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
