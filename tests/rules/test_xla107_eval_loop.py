"""XLA107 on evaluation loops (held-out 7, K5): ``model.eval()`` + ``with torch.no_grad():``
over a DataLoader, in a training script being converted. With nothing read on the host per
batch, every batch's forward pass joins one graph that runs only when a result is read after
the loop: a sync per batch is added (safe: a sync only materialises pending tensors). A per-batch
host read (``.item()``) already runs the graph each batch: there the read is the site (XLA401's
business), and XLA107 stays quiet."""

import subprocess
import sys
from pathlib import Path

import pytest
from xla_lens.engine import fix_source

from tests.helpers import findings, fixed, run_counting_executions, src

HEAD = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda"
torch.manual_seed(0)
net = nn.Linear(4, 3).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
data = TensorDataset(torch.randn(48, 4), torch.randint(0, 3, (48,)))
train_loader = DataLoader(data, batch_size=8, drop_last=True)
test_loader = DataLoader(data, batch_size=8)


def fit():
    net.train()
    for x, y in train_loader:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
"""

ACCUMULATING_EVAL = (
    HEAD
    + """

def evaluate():
    net.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    with torch.no_grad():
        for x, y in test_loader:
            x, y = x.to(device), y.to(device)
            correct += net(x).argmax(1).eq(y).sum()
    return correct.item()


for epoch in range(2):
    fit()
    print("correct", evaluate())
"""
)

READING_EVAL = (
    HEAD
    + """

def evaluate():
    net.eval()
    total, correct = 0.0, 0
    with torch.no_grad():
        for x, y in test_loader:
            x, y = x.to(device), y.to(device)
            out = net(x)
            total += nn.functional.cross_entropy(out, y).item()
            correct += out.argmax(1).eq(y).sum().item()
    return total, correct


fit()
print(evaluate())
"""
)


def _eval_header(code: str) -> int:
    return next(i for i, line in enumerate(src(code).splitlines()) if "in test_loader" in line)


def test_an_eval_loop_accumulating_on_the_device_gets_a_sync_per_batch():
    found = findings(ACCUMULATING_EVAL, "XLA107")
    evals = [f for f in found if f.span.start.line == _eval_header(ACCUMULATING_EVAL)]
    (f,) = evals
    assert "evaluation loop" in f.message and f.fix is not None and f.fix.safe
    out = fixed(ACCUMULATING_EVAL, "XLA107")
    assert (
        "            correct += net(x).argmax(1).eq(y).sum()\n            torch_xla.sync()\n" in out
    )
    # The training loop keeps its own finding and sync.
    assert "        opt.step()\n        torch_xla.sync()\n" in out


def test_an_eval_loop_testing_a_tensor_each_batch_still_gets_its_sync_and_says_why():
    # Depth-Anything-V2's validation (held-out 69): `if valid_mask.sum() < 10: continue` reads
    # only what the test needs; the accumulated metrics still grow one graph (measured: the
    # accumulator's IR grows by the same number of lines each batch on PJRT CPU).
    code = ACCUMULATING_EVAL.replace(
        "            correct += net(x)",
        "            valid = net(x)\n"
        "            if valid.sum() < 1:\n"
        "                continue\n"
        "            correct += net(x)",
    )
    (f,) = [f for f in findings(code, "XLA107") if f.span.start.line == _eval_header(code)]
    assert "its per-batch test of a tensor (line 30)" in f.message
    assert "nothing in it reads" not in f.message and f.fix is not None and f.fix.safe


def test_an_eval_loop_that_reads_each_batch_on_the_host_is_left_to_the_reads():
    found = findings(READING_EVAL, "XLA107")
    assert [f.span.start.line for f in found] == [15]  # the training loop only


def test_an_eval_loop_formatting_a_device_average_each_batch_reads_it():
    # Held-out 18 (bearpaw's test(): `bar.suffix = "...".format(top1.avg)` per batch):
    # formatting a tensor reads it, so the graph already runs each batch.
    code = ACCUMULATING_EVAL.replace(
        "            correct += net(x).argmax(1).eq(y).sum()\n",
        "            correct += net(x).argmax(1).eq(y).sum()\n"
        '            status = "correct {:d}".format(correct)\n',
    )
    assert [f.span.start.line for f in findings(code, "XLA107")] == [15]
    # Formatting a batch index reads nothing from the device: the loop still needs its sync.
    code = code.replace(".format(correct)", ".format(x.size(0))")
    assert len(findings(code, "XLA107")) == 2


@pytest.mark.parametrize(
    "variant",
    [
        # no no_grad and no eval mode: not recognisably an evaluation
        ("    net.eval()\n", ""),
        # already synced
        (
            "            correct += net(x).argmax(1).eq(y).sum()\n",
            "            correct += net(x).argmax(1).eq(y).sum()\n            torch_xla.sync()\n",
        ),
        # nothing moved to a device in the loop: a host-side pass over the data
        ("            x, y = x.to(device), y.to(device)\n", ""),
    ],
)
def test_other_loops_stay_quiet(variant: tuple[str, str]):
    code = src(ACCUMULATING_EVAL).replace(*variant)
    if variant[0] == "    net.eval()\n":
        code = code.replace("    with torch.no_grad():\n", "    if True:\n")
    if "torch_xla.sync()" in code:
        code = "import torch_xla\n" + code
    assert all(f.span.start.line != _eval_header(code) for f in findings(code, "XLA107"))


def test_a_loop_after_eval_mode_without_no_grad_gets_its_sync():
    # held-out 20 (mixup-cifar10's test(): `net.eval()` and the legacy `volatile=True`, no
    # no_grad): the loop runs no backward pass, so it evaluates; its forward passes join one
    # growing graph without a sync per batch.
    code = src(ACCUMULATING_EVAL).replace("    with torch.no_grad():\n", "    if True:\n")
    assert any(f.span.start.line == _eval_header(code) for f in findings(code, "XLA107"))


def test_an_eval_loop_run_from_inside_the_training_loop_is_left_alone():
    # A sync there would run only on evaluation steps, yet count as the training loop's.
    code = src(ACCUMULATING_EVAL).replace(
        "        opt.step()\n",
        "        opt.step()\n        evaluate()\n",
    )
    found = findings(code, "XLA107")
    assert all(f.span.start.line != _eval_header(code) for f in found)
    assert "            torch_xla.sync()\n" not in fixed(code, "XLA107")


def test_an_eval_loop_in_a_decorated_function_over_a_tqdm_loader_is_found():
    code = (
        src(ACCUMULATING_EVAL)
        .replace("def evaluate():\n", "@torch.no_grad()\ndef evaluate():\n")
        .replace("    with torch.no_grad():\n", "    if True:\n")
        .replace("in test_loader:", "in enumerate(test_loader):")
        .replace("for x, y in enumerate", "for i, (x, y) in enumerate")
    )
    found = findings(code, "XLA107")
    assert any("evaluation loop" in f.message for f in found)


@pytest.mark.xla
@pytest.mark.parametrize("grad_off", ["    with torch.no_grad():\n", "    if True:\n"])
def test_the_converted_eval_loop_gives_the_same_count_one_graph_per_batch(
    tmp_path: Path, grad_off: str
):
    # Also with gradients on after `net.eval()` (held-out 20's legacy `volatile=True` loop).
    code = src(ACCUMULATING_EVAL).replace("    with torch.no_grad():\n", grad_off)
    original = tmp_path / "orig.py"
    original.write_text(code.replace('device = "cuda"', 'device = "cpu"'))
    run = subprocess.run(
        [sys.executable, str(original)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-2000:]
    expected = run.stdout.split()
    out = fix_source(code).source
    assert "            torch_xla.sync()\n" in out and "cuda" not in out, out
    script = tmp_path / "conv.py"
    script.write_text(out)
    lines = run_counting_executions(script)
    assert lines["correct"] == expected[-1]
    # Per epoch: 5 training steps + 6 eval batches, each its own graph, and the final read.
    no_eval_sync = tmp_path / "nosync.py"
    no_eval_sync.write_text(out.replace("            torch_xla.sync()\n", ""))
    assert int(lines["executions"]) > int(run_counting_executions(no_eval_sync)["executions"])


COUNTER_EVAL = (
    HEAD
    + """
held_out = torch.randn(50, 4).to(device)


def evaluate(source, bptt=8):
    net.eval()
    total = 0
    for i in range(0, source.size(0) - 1, bptt):
        chunk = source[i:i + bptt]
        total += len(chunk) * net(chunk).pow(2).mean()
    return total.item() / len(source)


for epoch in range(2):
    fit()
    print("loss", evaluate(held_out))
"""
)


def test_a_counter_loop_over_slices_of_a_device_tensor_gets_its_sync():
    # held-out 23 r3 (awd-lstm-lm's evaluate()): the batches are slices of a tensor already on
    # the device, so no move is in the loop; the module it calls is on the device.
    code = src(COUNTER_EVAL)
    header = code.splitlines().index("    for i in range(0, source.size(0) - 1, bptt):")
    (f,) = [f for f in findings(code, "XLA107") if "evaluation loop" in f.message]
    assert f.span.start.line == header and f.fix is not None and f.fix.safe
    assert "        total += len(chunk) * net(chunk).pow(2).mean()\n        torch_xla.sync()\n" in (
        fixed(code, "XLA107")
    )


def test_a_counter_loop_calling_no_placed_module_stays_quiet():
    code = src(COUNTER_EVAL).replace("net(chunk)", "chunk")
    assert not [f for f in findings(code, "XLA107") if "evaluation loop" in f.message]


RANKER = """

class Ranker(nn.Module):
    def __init__(self, ks):
        super().__init__()
        self.ks = ks

    def forward(self, scores, labels):
        return [self._hit(scores, labels, k) for k in self.ks]

    def _hit(self, scores, labels, k):
        top = scores.topk(k, dim=-1).indices
        return (top == labels.unsqueeze(-1)).any(-1).float().mean()READ


ranker = Ranker([1, 2])


def evaluate():
    net.eval()
    with torch.no_grad():
        for x, y in test_loader:
            x, y = x.to(device), y.to(device)
            hits = ranker(net(x), y)
    return hits


fit()
print(evaluate())
"""


@pytest.mark.parametrize("read", [True, False])
def test_an_eval_loop_calling_a_module_whose_forward_reads_each_batch(read: bool):
    # Held-out 80 (RecFormer): `ranker(scores, labels)` runs a metrics module whose forward
    # calls `.item()` per k: the graph already runs each batch, so "nothing in it reads a
    # result per batch" was untrue. A forward that reads nothing still needs the sync.
    code = HEAD + RANKER.replace("READ", ".item()" if read else "")
    evals = [f for f in findings(code, "XLA107") if f.span.start.line == _eval_header(code)]
    assert len(evals) == (0 if read else 1)


def test_an_eval_loop_calling_a_helper_of_the_script_that_reads_each_batch():
    code = ACCUMULATING_EVAL.replace(
        "            correct += net(x).argmax(1).eq(y).sum()\n",
        "            correct += count(net(x), y)\n",
    ).replace(
        "\ndef evaluate():",
        "\ndef count(out, y):\n    return out.argmax(1).eq(y).sum().item()\n\n\ndef evaluate():",
    )
    assert all(f.span.start.line != _eval_header(code) for f in findings(code, "XLA107"))


def test_an_eval_loop_calling_a_sibling_module_whose_forward_reads(tmp_path: Path):
    from xla_lens.engine import analyze  # noqa: PLC0415

    body = RANKER.replace("READ", ".item()")
    cls, rest = body.split("\n\nranker = ")
    (tmp_path / "metrics.py").write_text("import torch.nn as nn\n" + cls + "\n")
    script = tmp_path / "train.py"
    code = src(HEAD).replace("import torch\n", "import torch\nfrom metrics import Ranker\n", 1)
    code += "\n\nranker = " + rest
    script.write_text(code)
    header = next(i for i, line in enumerate(code.splitlines()) if "in test_loader" in line)
    found = [f for f in analyze(code, str(script)).findings if f.code == "XLA107"]
    assert found and all(f.span.start.line != header for f in found)
    (tmp_path / "metrics.py").write_text("import torch.nn as nn\n" + cls.replace(".item()", ""))
    found = [f for f in analyze(code, str(script)).findings if f.code == "XLA107"]
    assert any(f.span.start.line == header for f in found)


ENCODE_ALL = """
import torch
import torch.nn as nn
from tqdm import tqdm
from torch.utils.data import DataLoader, TensorDataset


def encode_all(model, items, batch_size):
    model.eval()
    embs = []
    with torch.no_grad():
        for i in tqdm(range(0, len(items), batch_size)):
            x = torch.LongTensor(items[i : i + batch_size]).to(device)
            embs.append(model(x).detach())
    return torch.cat(embs, dim=0)


device = torch.device("cuda")
net = nn.Embedding(10, 4).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randint(0, 10, (32,))), batch_size=4)
for (x,) in loader:
    loss = net(x.to(device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(encode_all(net, list(range(10)), 4).sum())
"""


def _counter_header(code: str) -> int:
    return next(i for i, line in enumerate(src(code).splitlines()) if "in tqdm(range" in line)


def test_a_counter_loop_moving_slices_into_the_module_it_was_handed_gets_its_sync():
    # Held-out 80 (RecFormer's encode_all_items): every slice moved to the device and run
    # through `model`, a parameter; the outputs are concatenated after the loop.
    found = findings(ENCODE_ALL, "XLA107")
    (f,) = [f for f in found if f.span.start.line == _counter_header(ENCODE_ALL)]
    assert "evaluation loop" in f.message and f.fix is not None and f.fix.safe
    out = fixed(ENCODE_ALL, "XLA107")
    assert "            embs.append(model(x).detach())\n            torch_xla.sync()\n" in out


@pytest.mark.parametrize(
    "variant",
    [
        # nothing moved to a device: slices of what the caller already placed, or host work
        ("torch.LongTensor(items[i : i + batch_size]).to(device)", "items[i : i + batch_size]"),
        # the called name is not handed in: a function of the script, not a module
        ("embs.append(model(x).detach())", "embs.append(len(x))"),
        # gradients on and no eval mode: not an evaluation
        (
            "    model.eval()\n    embs = []\n    with torch.no_grad():\n",
            "    embs = []\n    if True:\n",
        ),
    ],
)
def test_other_counter_loops_stay_quiet(variant: tuple[str, str]):
    code = src(ENCODE_ALL).replace(*variant)
    assert code != src(ENCODE_ALL)
    found = findings(code, "XLA107")
    assert all(f.span.start.line != _counter_header(code) for f in found)
