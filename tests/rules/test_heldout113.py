"""Held-out 113: a ``--device`` option read behind ``torch.cuda.is_available()`` whose fix
waits for review (a checkpoint loaded onto the device) still drops that test when accepted
(it kept it, and the accepted conversion trained on the CPU); a ``CUDA_VISIBLE_DEVICES``
read under ``if "CUDA_VISIBLE_DEVICES" in os.environ:`` raises nothing on an XLA host."""

from __future__ import annotations

from tests.helpers import findings, fixed, src

GUARDED_OPTION = src("""
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
args = parser.parse_args()
device = torch.device(args.device if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 2).to(device)
ckpt = torch.load("x.pt", map_location=device)
print(ckpt["scaler"])
""")


def test_the_review_fix_of_a_guarded_option_drops_the_guard_too():
    (option,) = [f for f in findings(GUARDED_OPTION, "XLA101") if f.span.start.line == 4]
    assert option.fix is not None and not option.fix.safe
    assert "so the fix drops that test too" in option.message
    out = fixed(GUARDED_OPTION, unsafe=True)
    assert "torch.device(args.device)" in out
    assert "is_available" not in out
    # Convert alone (the safe fixes) leaves the option and its test as they are.
    assert "torch.cuda.is_available()" in fixed(GUARDED_OPTION)


def test_the_guarded_picker_is_named_on_the_first_check():
    infos = [f for f in findings(GUARDED_OPTION, "XLA101") if f.span.start.line == 6]
    assert infos and "the fix of --device (line 5, XLA101) drops this test" in infos[0].message


VISIBLE = src("""
import os

if "CUDA_VISIBLE_DEVICES" in os.environ:
    gpus = len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))
else:
    gpus = 1
""")


def test_a_visible_devices_read_under_a_membership_test_claims_no_key_error():
    assert findings(VISIBLE, "XLA403") == []
    unguarded = VISIBLE.replace('if "CUDA_VISIBLE_DEVICES" in os.environ:', "if True:")
    (f,) = findings(unguarded, "XLA403")
    assert "KeyError" in f.message
