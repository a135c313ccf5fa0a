"""A copy of the model's state dict kept for an EMA and saved at the end (held-out 51's
minimal-diffusion: ``args.ema_dict = copy.deepcopy(model.state_dict())``, updated in the loop,
then ``torch.save(args.ema_dict, path)``): it holds the device's tensors, so it is a checkpoint
like the state dict itself."""

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
