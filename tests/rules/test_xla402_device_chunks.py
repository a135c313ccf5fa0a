"""XLA402: chunks sliced off data that already lives on the device (word_language_model's
``get_batch(source, i)`` over a ``batchify`` that ends in ``.to(device)``, held-out 169): every
new offset is a new graph, not one extra compile for the short last chunk."""

import subprocess
import sys

import pytest

from tests.helpers import findings, src

LM = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
bptt = 35


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous(){MOVE}


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def evaluate(model, data_source):
    total = 0.0
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i)
            total += model(data).sum()
    return total


def train(model, opt, train_data):
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        loss = torch.nn.functional.mse_loss(model(data), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()


train_data = batchify(torch.randn(1000), 20)
val_data = batchify(torch.randn(200), 10)
model = torch.nn.Linear(20, 20).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train(model, opt, train_data)
evaluate(model, val_data)
"""


def _chunks(code: str) -> list:
    return [
        f
        for f in findings(code, "XLA402")
        if "source[" in src(code).splitlines()[f.span.start.line]
    ]


def test_slices_of_device_data_say_every_offset_compiles():
    code = LM.replace("{MOVE}", ".to(device)")
    found = _chunks(code)
    assert len(found) == 2, [f.message for f in found]
    for f in found:
        assert "slices a tensor already on the device (`data.view(bsz, -1)" in f.message
        assert "compiles a new graph for every offset" in f.message
        assert "once, then it is taken from the cache" not in f.message
        assert "Keep the data on the CPU" in f.manual


def test_slices_of_host_data_keep_the_short_last_chunk_finding():
    found = _chunks(LM.replace("{MOVE}", ""))
    assert found and all("once, then it is taken from the cache" in f.message for f in found)


def test_one_caller_passing_host_data_is_no_evidence():
    code = LM.replace("{MOVE}", ".to(device)").replace(
        "evaluate(model, val_data)", "evaluate(model, torch.randn(50, 20))"
    )
    assert all("already on the device" not in f.message for f in _chunks(code))


@pytest.mark.xla
def test_the_claim_ten_device_offsets_compile_ten_graphs_one_on_the_host(tmp_path):
    script = tmp_path / "slices.py"
    script.write_text(
        src("""
        import torch, torch_xla
        import torch_xla.debug.metrics as met
        d = torch_xla.device()
        w = torch.randn(8, 8, device=d, requires_grad=True)
        on_device, on_host = torch.randn(100, 8).to(d), torch.randn(100, 8)
        def run(get):
            met.clear_all()
            for i in range(0, 60, 6):
                (get(i) @ w).sum().backward()
                torch_xla.sync()
            return met.metric_data("CompileTime")[0]
        print(run(lambda i: on_device[i:i + 6]), run(lambda i: on_host[i:i + 6].to(d)))
        """)
    )
    env = {"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["10", "1"]
