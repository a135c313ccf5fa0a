"""XLA402: a branch on a host random draw inside a loop of the training step (held-out 172's
teacher forcing per time step): each step's sequence of choices is a new graph."""

from tests.helpers import findings

SEQ2SEQ = """
import random

import torch
import torch.nn as nn


class Seq2Seq(nn.Module):
    def __init__(self, vocab=20, hid=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, hid)
        self.cell = nn.GRUCell(hid, hid)
        self.out = nn.Linear(hid, vocab)

    def forward(self, tgt, teacher_forcing=0.5):
        h = torch.zeros(tgt.size(0), self.cell.hidden_size, device=tgt.device)
        inp = tgt[:, 0]
        logits = []
        for t in range(1, tgt.size(1)):
            h = self.cell(self.embed(inp), h)
            step = self.out(h)
            logits.append(step)
            {CHOICE}
        return torch.stack(logits, 1)


model = Seq2Seq().to("cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for tgt in loader:
    tgt = tgt.to("cuda")
    loss = model(tgt).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _branches(code: str) -> list:
    return [f for f in findings(code, "XLA402") if "host random draw" in f.message]


def test_teacher_forcing_per_time_step_is_reported():
    code = SEQ2SEQ.replace(
        "{CHOICE}",
        "use_tf = random.random() < teacher_forcing\n"
        "            inp = tgt[:, t] if use_tf else step.argmax(1)",
    )
    (f,) = _branches(code)
    assert "(random.random, line 22)" in f.message and "forward" in f.message
    assert "torch.where" in f.manual


def test_an_if_statement_on_a_draw_is_reported_too():
    code = SEQ2SEQ.replace(
        "{CHOICE}",
        "if random.random() < teacher_forcing:\n"
        "                inp = tgt[:, t]\n"
        "            else:\n"
        "                inp = step.argmax(1)",
    )
    assert len(_branches(code)) == 1


def test_one_draw_per_step_outside_the_inner_loop_is_left_alone():
    code = SEQ2SEQ.replace("{CHOICE}", "inp = tgt[:, t] if use_tf else step.argmax(1)").replace(
        "        inp = tgt[:, 0]\n",
        "        inp = tgt[:, 0]\n        use_tf = random.random() < teacher_forcing\n",
    )
    assert _branches(code) == []


def test_a_tensor_blend_is_left_alone():
    code = SEQ2SEQ.replace(
        "{CHOICE}",
        "mask = torch.rand(tgt.size(0), device=tgt.device) < teacher_forcing\n"
        "            inp = torch.where(mask, tgt[:, t], step.argmax(1))",
    )
    assert _branches(code) == []
