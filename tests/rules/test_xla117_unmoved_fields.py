"""XLA117: a loop that moves one field of its batch and hands another to the model unmoved
(the wrapper's scatter did it on CUDA; held-out 17, 3D-ResNets training.py / validation.py)."""

from tests.helpers import findings, fixed

TRAIN = """
import torch

def train_epoch(data_loader, model, criterion, optimizer, device):
    for i, (inputs, targets) in enumerate(data_loader):
        targets = targets.to(device, non_blocking=True)
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def _unmoved(code: str) -> list:
    return [f for f in findings(code, "XLA117") if "without being moved" in f.message]


def test_the_unmoved_input_is_found_and_moved_where_the_targets_go():
    (f,) = _unmoved(TRAIN)
    assert f.span.start.line + 1 == 6 and f.fix is not None and f.fix.safe
    assert "`inputs`" in f.message and "`targets`" in f.message
    assert "outputs = model(inputs.to(device))" in fixed(TRAIN, "XLA117")


def test_a_validation_loop_under_no_grad_too():
    code = """
    import torch
    def val_epoch(data_loader, model, device):
        with torch.no_grad():
            for inputs, targets in data_loader:
                targets = targets.cuda()
                outputs = model(inputs)
    """
    (f,) = _unmoved(code)
    assert "model(inputs.cuda())" in fixed(code, "XLA117")


def test_a_validation_loop_in_eval_mode_without_no_grad_too():
    # held-out 19 (CutMix-PyTorch validate(): `model.eval()`, no no_grad, `model(input)` of a
    # DataParallel model): the safe-fixed script crashed there ("Expected XLA tensor").
    code = """
    import torch
    def validate(val_loader, model, criterion):
        model.eval()
        for i, (input, target) in enumerate(val_loader):
            target = target.cuda()
            output = model(input)
            loss = criterion(output, target)
    """
    (f,) = _unmoved(code)
    assert "output = model(input.cuda())" in fixed(code, "XLA117")


def test_a_later_argument_may_be_strings_and_is_left_alone():
    # BLIP: model(image, caption) with caption a tuple of str.
    code = TRAIN.replace("outputs = model(inputs)", "outputs = model(targets, inputs)")
    assert _unmoved(code) == []


def test_an_xla_loader_moves_whole_batches():
    code = """
    import torch_xla
    import torch_xla.distributed.parallel_loader as pl
    def train_epoch(loader, model, optimizer, device):
        for inputs, targets in pl.MpDeviceLoader(loader, device):
            targets = targets.to(device)
            loss = model(inputs).sum() + targets.sum()
            loss.backward()
            optimizer.step()
    """
    assert _unmoved(code) == []


def test_nothing_moved_is_the_other_finding_not_this_one():
    code = TRAIN.replace("        targets = targets.to(device, non_blocking=True)\n", "")
    assert _unmoved(code) == []
