"""XLA108 on a checkpoint saved as a list or tuple literal (held-out 174, ddim's
``states = [model.state_dict(), optimizer.state_dict(), epoch, step]``): before, the save was
not seen as a checkpoint, and under a DataParallel rebinding not reported at all. A list comes
back from xm.save as a list (measured below), so the swap is safe; a tuple comes back as a
list, so that swap waits for review."""

import os
import subprocess
import sys

from tests.helpers import findings, fixed, src

SCRIPT = src("""
import torch
import torch.nn as nn


def train(loader):
    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    model = nn.Linear(4, 4).to(device)
    model = torch.nn.DataParallel(model)
    optimizer = torch.optim.Adam(model.parameters())
    step = 0
    for epoch in range(3):
        for x in loader:
            loss = model(x.to(device)).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 10 == 0:
                states = STATES
                torch.save(states, "ckpt.pth")
""")

LIST = "[model.state_dict(), optimizer.state_dict(), epoch, step]"
TUPLE = "(model.state_dict(), optimizer.state_dict(), epoch, step)"


def _save(code: str):
    (f,) = findings(code, "XLA108")
    return f


def test_a_list_of_state_dicts_is_a_checkpoint_with_a_safe_swap():
    code = SCRIPT.replace("STATES", LIST)
    f = _save(code)
    assert f.fix is not None and f.fix.safe, f
    assert 'xm.save(states, "ckpt.pth")' in fixed(code, "XLA108")


def test_a_tuple_of_state_dicts_waits_for_review():
    f = _save(SCRIPT.replace("STATES", TUPLE))
    assert f.fix is not None and not f.fix.safe
    assert "tuple" in f.fix.review_reason and "list" in f.fix.review_reason


def test_a_tuple_written_in_the_call_waits_too():
    code = SCRIPT.replace("states = STATES\n", "").replace(
        'torch.save(states, "ckpt.pth")', f'torch.save({TUPLE}, "ckpt.pth")'
    )
    f = _save(code)
    assert f.fix is not None and not f.fix.safe and "tuple" in f.fix.review_reason


def test_a_list_without_a_state_dict_is_not_a_checkpoint():
    code = SCRIPT.replace("STATES", "[epoch, step]")
    assert not [f for f in findings(code, "XLA108") if "checkpoint with" in f.message]


XM_SAVE = """
import torch, torch_xla, torch_xla.core.xla_model as xm
m = torch.nn.Linear(2, 2).to(torch_xla.device())
o = torch.optim.Adam(m.parameters())
m(torch.ones(1, 2, device=torch_xla.device())).sum().backward()
o.step()
xm.save([m.state_dict(), o.state_dict(), 3, 7], "l.pth")
xm.save((m.state_dict(), 3), "t.pth")
a, b = torch.load("l.pth"), torch.load("t.pth")
print(type(a).__name__, a[0]["weight"].device, a[1]["state"][0]["exp_avg"].device, a[2:])
print(type(b).__name__)
"""


def test_xm_save_keeps_a_list_and_turns_a_tuple_into_a_list(tmp_path):
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    out = subprocess.run(
        [sys.executable, "-c", XM_SAVE], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["list cpu cpu [3, 7]", "list"]
