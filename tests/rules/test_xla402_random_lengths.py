"""XLA402 on a slice length drawn at random every step and handed to a function that slices
with it (held-out 23 r2, awd-lstm-lm's variable-length BPTT): a new batch shape, and so a new
compile of the step, for every length drawn."""

from xla_lens.engine import analyze

from tests.helpers import findings, src

BATCHES = """
def get_batch(source, i, seq_len=None):
    seq_len = min(seq_len if seq_len else 35, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target
"""

LOOP = """
import numpy as np
import torch
{imports}

def train(model, train_data, opt, crit, bptt):
    i = 0
    while i < train_data.size(0) - 2:
        length = bptt if np.random.random() < 0.95 else bptt / 2.0
        seq_len = max(5, int(np.random.normal(length, 5)))
        data, targets = get_batch(train_data, i, seq_len=seq_len)
        loss = crit(model(data), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        i += seq_len
"""


def test_a_random_length_handed_to_a_batching_function_of_the_script():
    (f,) = [
        f for f in findings(BATCHES + LOOP.format(imports=""), "XLA402") if "random" in f.message
    ]
    assert "`get_batch(...)` slices with `seq_len`, drawn at random every step" in f.message
    assert "numpy.random.normal, line 15" in f.message and "source[i:i + seq_len]" in f.message
    assert f.span.start.line == 15 and f.fix is None and "few fixed lengths" in f.manual


def test_a_random_length_handed_to_a_workspace_module_is_reported_at_the_call(tmp_path):
    (tmp_path / "utils.py").write_text(src(BATCHES), encoding="utf-8")
    script = tmp_path / "main.py"
    script.write_text(src(LOOP.format(imports="from utils import get_batch")), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    (f,) = [f for f in result.findings if f.code == "XLA402"]
    assert "in `get_batch`, utils.py:3" in f.message and f.span.start.line == 9


def test_a_length_drawn_once_before_the_loop_is_one_shape():
    draws = (
        "        length = bptt if np.random.random() < 0.95 else bptt / 2.0\n"
        "        seq_len = max(5, int(np.random.normal(length, 5)))\n"
    )
    loop = LOOP.format(imports="")
    assert draws in loop
    once = loop.replace(draws, "").replace(
        "    while i <", draws.replace("        ", "    ") + "    while i <"
    )
    assert [f for f in findings(BATCHES + once, "XLA402") if "random" in f.message] == []


def test_a_random_offset_with_a_fixed_length_is_no_new_shape():
    code = """
    import random
    def window(source, start, n):
        return source[start:start + n]
    def train(model, data, opt):
        for step in range(100):
            start = random.randint(0, len(data) - 65)
            x = window(data, start, 64)
            loss = model(x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """
    assert findings(code, "XLA402") == []


STEPPED = """
import torch

def batches(data, size):
    for start in range(0, len(data), size):
        yield data[start : start + size]

def main(model, opt):
    data = torch.randn(23, 12)
    for epoch in range(3):
        for batch in batches(data, 8):
            loss = model(batch.cuda()).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
"""


def test_chunks_stepped_through_the_data_leave_a_short_last_chunk():
    # The e2e Run sample (odd_batch.py): 23 rows in chunks of 8 give 8, 8, 7; the generator is
    # the training loop's own iterable.
    (f,) = findings(STEPPED, "XLA402")
    assert "`data[start : start + size]` takes chunks stepping through" in f.message
    assert "`range(0, len(data), size)` (line 4)" in f.message and f.span.start.line == 4
    stopped = STEPPED.replace("range(0, len(data), size)", "range(0, len(data) - size, size)")
    assert findings(stopped, "XLA402") == []
