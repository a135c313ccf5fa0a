"""A trainer handed both a model and an optimizer, which moves the model itself (held-out 47's
spoter2 ``BaseTrainer``): the caller built the optimizer, often from the model's CPU
parameters, so pointing that move at the XLA device would leave the optimizer updating stale
CPU tensors. XLA109 says so at the move when no caller is in sight, and XLA101's device fixes
there wait for review. The proof by running is in tests/conversions/test_handed_optimizer.py."""

from tests.helpers import findings, fixed

TRAINER = """
import torch


class BaseTrainer:
    def __init__(self, model: torch.nn.Module, optimizer, epochs: int):
        self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.optimizer = optimizer
        self.epochs = epochs

    def step(self, batch):
        self.optimizer.zero_grad()
        loss = self.model(batch.to(self.device)).sum()
        loss.backward()
        self.optimizer.step()
"""


def test_the_device_fix_waits_for_review_and_xla109_explains():
    (device,) = findings(TRAINER, "XLA101")
    assert device.fix is not None and not device.fix.safe
    assert "handed in beside the optimizer `optimizer`" in device.fix.review_reason
    (stale,) = findings(TRAINER, "XLA109")
    assert stale.fix is None and "model.to(self.device)" in stale.message
    assert "no caller in this workspace" in stale.message
    assert "torch_xla" not in fixed(TRAINER)  # Convert leaves the picker as it is


def test_cuda_moves_of_a_handed_model_wait_for_review_too():
    code = TRAINER.replace("model.to(self.device)", "model.cuda()").replace(
        "batch.to(self.device)", 'batch.to("cuda")'
    )
    cuda = [f for f in findings(code, "XLA101") if ".cuda()" in f.message]
    assert len(cuda) == 1 and not cuda[0].fix.safe
    batch = [f for f in findings(code, "XLA101") if '.to("cuda")' in f.message]
    assert batch and batch[0].fix.safe  # a batch, not a module handed in


def test_a_trainer_that_builds_its_own_optimizer_after_the_move_is_safe():
    code = TRAINER.replace("optimizer, epochs: int", "lr: float, epochs: int").replace(
        "self.optimizer = optimizer",
        "self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)",
    )
    (device,) = findings(code, "XLA101")
    assert device.fix is not None and device.fix.safe
    assert findings(code, "XLA109") == []


def test_a_caller_in_the_file_is_left_to_the_flow_analysis():
    code = (
        TRAINER
        + """

def main():
    net = torch.nn.Linear(4, 1)
    BaseTrainer(net, torch.optim.SGD(net.parameters(), lr=0.1), 1)
"""
    )
    assert not any("no caller in this workspace" in f.message for f in findings(code, "XLA109"))


PARAM_GROUPS = """
import torch


def main(model, base_lr):
    modules_ori = [model.layer0, model.layer1]
    params_list = []
    for module in modules_ori:
        params_list.append(dict(params=module.parameters(), lr=base_lr))
    optimizer = torch.optim.SGD(params_list, lr=base_lr)
    model = torch.nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[0])
    return model, optimizer
"""


def test_parameter_groups_from_submodules_before_the_move():
    # held-out 49's semseg: the event analysis cannot pair a list of param-group dicts with a
    # move inside a wrapper call; the derived names can.
    (stale,) = findings(PARAM_GROUPS, "XLA109")
    assert stale.span.start.line == 8 and "before `model.cuda()`" in stale.message
    (move,) = [f for f in findings(PARAM_GROUPS, "XLA101") if ".cuda()" in f.message]
    # No fix even for review: applied alone (`--unsafe-fixes`) the move gives a script that
    # runs and never trains (held-out 164's IGEV); the finding says to reorder first.
    assert move.fix is None and "optimizer built on line 9" in move.message
    assert "before the optimizer is built (line 9)" in move.manual


def test_an_optimizer_of_another_model_leaves_the_move_safe():
    code = PARAM_GROUPS.replace(
        "for module in modules_ori:", "for module in [torch.nn.Linear(2, 2)]:"
    )
    assert findings(code, "XLA109") == []
    (move,) = [f for f in findings(code, "XLA101") if ".cuda()" in f.message]
    assert move.fix.safe
