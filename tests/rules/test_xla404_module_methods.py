"""XLA404: a method of the module accelerate unwraps is no tensor: ``unwrap_model(m)``
returns the module, it does not run it."""

from tests.helpers import findings

UNWRAPPED = """
import torch


class Loss(torch.nn.Module):
    def __init__(self, start):
        super().__init__()
        self.start = start

    def should_train_disc(self, step):
        return step >= self.start

    def forward(self, x):
        return x.pow(2).mean()


def train(loader, model, loss_module, opt, cfg, accelerator, step):
    for batch in loader:
        loss = loss_module(model(batch.to(accelerator.device)))
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        if cfg["finetune"] and accelerator.unwrap_model(loss_module).should_train_disc(step):
            print("disc step", step)
        if loss > 10:
            print("diverging")
        step += 1
    return step
"""


def test_a_method_of_an_unwrapped_module_is_not_a_tensor_test():
    found = findings(UNWRAPPED, "XLA404")
    # The loss still is a tensor.
    assert [f.span.start.line for f in found] == [23]
