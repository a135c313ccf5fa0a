"""A batch's length unpacked beside its tensors (``for i, (data, target, seq_len) in
enumerate(it)``) is a Python int (held-out 24, transformer-xl's evaluate()): a loss averaged
with it and returned from ``.item()`` values is a float, so formatting or comparing it in the
training loop reads nothing from the device."""

import pytest

from tests.helpers import findings

CODE = """
import torch

def evaluate(model, eval_iter):
    model.eval()
    total_len, total_loss = 0, 0.0
    with torch.no_grad():
        for i, (data, target, seq_len) in enumerate(eval_iter):
            loss = model(data, target).mean()
            total_loss += seq_len * loss.float().item()
            total_len += seq_len
    return total_loss / total_len

def train(model, tr_iter, va_iter, opt):
    best = None
    for step, (data, target, seq_len) in enumerate(tr_iter):
        loss = model(data.cuda(), target.cuda()).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            val_loss = evaluate(model, va_iter)
            print("valid loss {:5.2f}".format(val_loss))
            if not best or val_loss < best:
                best = val_loss
"""


@pytest.mark.parametrize("code", ["XLA401", "XLA404"])
def test_a_loss_averaged_over_length_fields_is_a_host_number(code):
    lines = [f.span.start.line for f in findings(CODE, code)]
    assert not [n for n in lines if n >= 20], lines


def test_a_field_with_another_name_may_be_a_tensor():
    weighted = CODE.replace("seq_len", "weight")
    assert [f for f in findings(weighted, "XLA404") if f.span.start.line == 22]
