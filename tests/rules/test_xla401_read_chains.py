"""A host read through other methods (``loss.cpu().detach().numpy().mean()``, held-out 65's
mdistiller trainers): the ``.cpu()`` leaves the report to the outer ``.numpy()``, which must
judge the value the chain starts from (``loss``), not the host copy in the middle."""

from tests.helpers import findings, src

TRAINER = src("""
import torch


class Trainer:
    def __init__(self, model, loader, optimizer):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer

    def train_epoch(self, meters):
        for idx, data in enumerate(self.loader):
            self.train_iter(data, meters)

    def train_iter(self, data, meters):
        image, target = data
        image = image.cuda()
        target = target.cuda()
        loss = torch.nn.functional.cross_entropy(self.model(image), target)
        loss.backward()
        self.optimizer.step()
        meters["losses"].update(loss.cpu().detach().numpy().mean(), image.size(0))
""")


def test_a_read_through_detach_between_cpu_and_numpy_is_reported_once():
    reads = findings(TRAINER, "XLA401")
    assert len(reads) == 1
    (f,) = reads
    assert ".numpy() reads a device tensor" in f.message
    assert "loss.cpu().detach().numpy()" in TRAINER.splitlines()[f.span.start.line]


def test_a_host_tensor_read_through_methods_stays_quiet():
    code = TRAINER.replace(
        'meters["losses"].update(loss.cpu().detach().numpy().mean(), image.size(0))',
        'meters["losses"].update(torch.zeros(3).detach().numpy().mean(), image.size(0))',
    )
    assert "torch.zeros(3)" in code
    assert findings(code, "XLA401") == []
