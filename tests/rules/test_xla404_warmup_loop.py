"""XLA404 / XLA401, held-out 14 (modded-nanogpt): a warmup loop over a list of Python ints
(``warm = sorted({0, 1} | {...})``) binds no tensors, so the step counter it shares with the
main ``for step in range(...)`` loop stays a Python int: tests and formatting of it read no
device value. A loop over a loader keeps its batches tensors."""

from tests.helpers import findings, src

WARMUP = src("""
import torch
import torch.nn as nn

model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
warm = sorted({0, 1} | {s + o for s in [5] for o in [-1, 0]})
for step in warm:
    loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
    loss.backward(); opt.step(); opt.zero_grad()

train_steps = 10
for step in range(train_steps + 1):
    last_step = step == train_steps
    if last_step or step % 5 == 0:
        val = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
        print(f"step {step} val {val:.4f}")
    if last_step:
        break
    loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
    loss.backward(); opt.step(); opt.zero_grad()
    print(f"step {step + 1}/{train_steps}")
""")


def _lines(code, rule):
    return [code.splitlines()[f.span.start.line].strip() for f in findings(code, rule)]


def test_a_warmup_loop_over_python_ints_binds_no_tensor():
    assert _lines(WARMUP, "XLA404") == []
    assert _lines(WARMUP, "XLA401") == ['print(f"step {step} val {val:.4f}")']


def test_a_loop_over_data_still_binds_tensors():
    data = WARMUP.replace(
        "warm = sorted({0, 1} | {s + o for s in [5] for o in [-1, 0]})",
        "warm = sorted(batches)",
    ).replace(
        "for step in warm:\n",
        "for step in warm:\n    if step.mean() > 0:\n        step = -step\n",
    )
    assert _lines(data, "XLA404") == ["if step.mean() > 0:"]


def test_a_range_loop_counter_is_an_int_whatever_an_earlier_loop_bound():
    unknown = WARMUP.replace(
        "warm = sorted({0, 1} | {s + o for s in [5] for o in [-1, 0]})",
        "warm = schedule.transition_steps()",
    )
    assert _lines(unknown, "XLA404") == []
    assert _lines(unknown, "XLA401") == ['print(f"step {step} val {val:.4f}")']
