"""XLA412: ``import torch_xla`` swaps torch.nn.GRU for its scan-based GRU (XLA tensors only,
no PackedSequence): reported where a converted script builds one (held-out 169, char-rnn)."""

import subprocess
import sys
from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic.workspace import clear_cache

from tests.helpers import findings, src

SCRIPT = """
import argparse
import torch
import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.GRU(hidden, hidden, 2{BIDI})
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x):
        y, _ = self.rnn(self.embed(x))
        return self.out(y)


parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_true")
args = parser.parse_args()
model = Decoder(30, 16)
if args.cuda:
    model.cuda()
opt = torch.optim.Adam(model.parameters())
for step in range(3):
    x = torch.randint(0, 30, (8, 4))
    if args.cuda:
        x = x.cuda()
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_gru_in_a_converted_script_is_reported():
    (f,) = findings(SCRIPT.replace("{BIDI}", ""), "XLA412")
    assert "torch_xla's scan-based GRU" in f.message and "XLA tensors only" in f.message
    assert f.fix is None and "_orig" in f.manual


def test_a_bidirectional_gru_keeps_pytorchs_class_and_is_left_alone():
    assert findings(SCRIPT.replace("{BIDI}", ", bidirectional=True"), "XLA412") == []


def test_packed_input_is_named():
    code = SCRIPT.replace("{BIDI}", "").replace(
        "        y, _ = self.rnn(self.embed(x))",
        "        packed = nn.utils.rnn.pack_padded_sequence(self.embed(x), [4] * 8)\n"
        "        y, _ = self.rnn(packed)\n"
        "        y, _ = nn.utils.rnn.pad_packed_sequence(y)",
    )
    (f,) = findings(code, "XLA412")
    assert "rejects PackedSequence input" in f.message
    assert "`nn.utils.rnn.pack_padded_sequence`, line 14" in f.message


def test_a_plain_cpu_script_gets_nothing():
    code = src(SCRIPT.replace("{BIDI}", "")).replace("    model.cuda()\n", "    pass\n")
    code = code.replace("        x = x.cuda()\n", "        pass\n")
    assert findings(code, "XLA412") == []


def test_a_workspace_class_that_builds_a_gru_is_named_at_its_construction(tmp_path: Path):
    clear_cache()
    model_src = src(SCRIPT.replace("{BIDI}", "")).split("\n\nparser")[0]
    (tmp_path / "model.py").write_text(model_src + "\n")
    script = tmp_path / "train.py"
    body = src(SCRIPT.replace("{BIDI}", "")).split("\n\nparser")[1]
    script.write_text("import argparse\nimport torch\nfrom model import Decoder\n\nparser" + body)
    result = analyze(script.read_text(), str(script))
    (f,) = [f for f in result.findings if f.code == "XLA412"]
    assert f.message.startswith("`Decoder(...)` builds a torch.nn.GRU (model.py line 10)")


@pytest.mark.xla
def test_the_claim_a_gru_on_cpu_tensors_fails_once_torch_xla_is_imported(tmp_path):
    probe = tmp_path / "gru.py"
    probe.write_text(
        "import torch\n"
        "cpu = torch.nn.GRU(4, 8)(torch.randn(5, 3, 4))[0].shape\n"
        "import torch_xla\n"
        "try:\n"
        "    torch.nn.GRU(4, 8)(torch.randn(5, 3, 4))\n"
        "    print('ran')\n"
        "except RuntimeError as e:\n"
        "    print('failed:', 'XLA tensors' in str(e), torch.nn.GRU.__module__)\n"
    )
    env = {"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, str(probe)], capture_output=True, text=True, env=env, timeout=240
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "failed: True torch_xla.experimental.gru"
