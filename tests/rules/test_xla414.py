"""XLA414: packed sequences on the XLA device (held-out 182: an LSTM text classifier and a
GRU-CRF tagger crashed at their first step once on the device). The claims are measured below
on the installed torch_xla: an LSTM on a PackedSequence fails at its forward, the backward of a
packed tensor that needs gradients fails (the image-captioning loss idiom), and packing targets
works."""

import subprocess
import sys

import pytest

from tests.helpers import findings, src

CLASSIFIER = src("""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 8, batch_first=True)
        self.out = nn.Linear(8, 2)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True)
        _, (h, _) = self.lstm(packed)
        return self.out(h[-1])


def train(loader):
    model = Classifier().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, lengths, y in loader:
        loss = nn.functional.cross_entropy(model(x.to(device), lengths), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
""")

CAPTIONS = src("""
import torch
from torch.nn.utils.rnn import pack_padded_sequence

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(decoder, loader, criterion, optimizer):
    for imgs, caps, caplens in loader:
        scores, caps_sorted, decode_lengths = decoder(imgs.to(device), caps.to(device), caplens)
        targets = caps_sorted[:, 1:]
        scores, _ = pack_padded_sequence(scores, decode_lengths, batch_first=True)
        targets, _ = pack_padded_sequence(targets, decode_lengths, batch_first=True)
        loss = criterion(scores, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def validate(decoder, loader, criterion):
    with torch.no_grad():
        for imgs, caps, caplens in loader:
            scores, caps_sorted, decode_lengths = decoder(imgs.to(device), caps.to(device), caplens)
            scores, _ = pack_padded_sequence(scores, decode_lengths, batch_first=True)
            print(criterion(scores, caps_sorted[:, 1:]).item())
""")


def _lines(code: str) -> list[int]:
    return [f.span.start.line + 1 for f in findings(code, "XLA414")]


def test_a_packed_sequence_fed_to_an_rnn_is_reported():
    (f,) = findings(CLASSIFIER, "XLA414")
    assert "goes into a call" in f.message and f.fix is None


def test_only_the_packing_a_backward_goes_through_is_reported():
    # The targets need no gradient, and validation packs under torch.no_grad().
    assert _lines(CAPTIONS) == [11]


def test_a_script_that_stays_on_the_cpu_is_left_alone():
    code = CLASSIFIER.replace(
        'torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'torch.device("cpu")'
    )
    assert _lines(code) == []


CLAIMS = """
import sys, torch, torch_xla
from torch.nn.utils.rnn import pack_padded_sequence
d = torch_xla.device()
lengths = torch.tensor([5, 3, 2])
case = sys.argv[1]
x = torch.randn(3, 5, 4).to(d)
if case == "rnn":
    out, _ = torch.nn.LSTM(4, 8, batch_first=True).to(d)(pack_padded_sequence(x, lengths, batch_first=True))
    torch_xla.sync()
elif case == "backward":
    scores = torch.nn.Linear(4, 2).to(d)(x)
    packed = pack_padded_sequence(scores, lengths, batch_first=True).data
    packed.sum().backward()
    torch_xla.sync()
else:
    targets = torch.randint(0, 2, (3, 5)).to(d)
    print(pack_padded_sequence(targets, lengths, batch_first=True).data.sum().item())
print("ok")
"""


@pytest.mark.xla
@pytest.mark.parametrize(
    ("case", "works"), [("rnn", False), ("backward", False), ("targets", True)]
)
def test_the_claims_on_the_installed_torch_xla(tmp_path, case, works):
    probe = tmp_path / "packed.py"
    probe.write_text(CLAIMS)
    env = {"PJRT_DEVICE": "CPU", "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [sys.executable, str(probe), case], capture_output=True, text=True, env=env, timeout=240
    )
    assert (run.returncode == 0) == works, run.stderr[-1500:]
    if not works:
        assert "data is not allocated yet" in run.stderr
