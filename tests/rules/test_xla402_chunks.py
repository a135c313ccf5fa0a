"""XLA402: chunked slices whose length is capped by what is left of the data
(word_language_model's ``get_batch``): the last chunk of each epoch is a new shape."""

from tests.helpers import findings


def test_chunk_length_capped_in_a_helper_called_from_the_loop():
    code = """
    import torch


    def get_batch(source, i):
        seq_len = min(args.bptt, len(source) - 1 - i)
        data = source[i:i + seq_len]
        target = source[i + 1:i + 1 + seq_len].view(-1)
        return data, target


    def train():
        for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            data, targets = get_batch(train_data, i)
            loss = criterion(model(data), targets)
            loss.backward()
            optimizer.step()
    """
    (f,) = findings(code, "XLA402")  # one finding per cap, at its first slice
    assert f.span.start.line == 5
    assert "min(args.bptt, len(source) - 1 - i)` (line 5)" in f.message
    assert f.fix is None
    assert "range(0, n - bptt, bptt)" in f.manual and "pad the last chunk" in f.manual


def test_inline_caps_in_the_training_loop():
    code = """
    import torch

    for i in range(0, n - 1, bptt):
        x = src[i:i + min(bptt, n - 1 - i)]
        criterion(model(x), y).backward()
        opt.step()
    for start in range(0, len(X), bs):
        xb = X[start:min(start + bs, len(X))]
        criterion(model(xb), y).backward()
        opt.step()
    """
    found = findings(code, "XLA402")
    assert [f.span.start.line for f in found] == [3, 7]


def test_fixed_length_chunks_and_other_slices_report_nothing():
    code = """
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm

    device = torch_xla.device()
    seq_len = min(args.bptt, args.max_len)
    for i in range(0, n - bptt, bptt):
        x = src[i:i + bptt]
        y = src[i + 1:i + 1 + seq_len]
        head = src[:min(bptt, n)]
        criterion(model(x), y).backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
    """
    assert findings(code, "XLA402") == []


def test_capped_chunks_outside_training_report_nothing():
    code = """
    import torch

    def evaluate(data_source):
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, bptt):
                seq_len = min(bptt, len(data_source) - 1 - i)
                data = data_source[i:i + seq_len]
                total += criterion(model(data), t).item()
    """
    assert findings(code, "XLA402") == []
