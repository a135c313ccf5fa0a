"""A CUDA-availability flag left for a hand edit holds the device moves back (held-out 182's
GRU-CRF tagger): under --unsafe-fixes its tensor-type aliases went to the XLA device on every
host while ``if CUDA: model = model.cuda()`` kept the model on the CPU, and the converted
script crashed ("Expected XLA tensor. Got: torch.FloatTensor"). Now the moves wait with the
flag, and the result runs where it ran."""

import os
import subprocess
import sys

from xla_lens.engine import Settings, fix_source

from tests.helpers import src

TAGGER = src("""
import torch
import torch.nn as nn

CUDA = torch.cuda.is_available()
Tensor = torch.cuda.FloatTensor if CUDA else torch.FloatTensor
randn = lambda *x: torch.randn(*x).cuda() if CUDA else torch.randn(*x)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x + randn(*x.shape) * 0)


torch.manual_seed(0)
model = Tagger()
if CUDA:
    model = model.cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = Tensor([[1.0, 2.0, 3.0, 4.0]] * 8)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("loss", step, round(loss.item(), 6))
""")


def test_the_device_moves_wait_for_the_flag_left_to_the_hand(tmp_path):
    out = fix_source(TAGGER, "tagger.py", Settings(), "modern", unsafe=True)
    assert out.error is None
    assert "torch.cuda.FloatTensor if CUDA" in out.source, out.source
    assert any("CUDA-availability flag" in why for _, why in out.held)
    script = tmp_path / "tagger.py"
    script.write_text(out.source)
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    before = subprocess.run([sys.executable, "-c", TAGGER], capture_output=True, text=True)
    assert run.stdout == before.stdout
