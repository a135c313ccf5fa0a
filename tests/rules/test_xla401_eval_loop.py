"""XLA401 on evaluation loops (held-out 7 K8/K9, held-out 8 D14): per-batch ``.item()`` reads
in ``model.eval()`` + ``with torch.no_grad():`` loops over a DataLoader. Each read runs the
pending graph on every batch (PJRT CPU, 6 batches: two ``.item()`` per batch gave 12 executions,
accumulating on the device and reading after the loop gave 6 executions and 2 transfers).
Reported with advice and no fix: a step closure is wrong for ``+=`` into Python numbers used
after the loop."""

from tests.helpers import findings, fixed, src
from tests.rules.test_xla107_eval_loop import READING_EVAL


def _eval_reads(code: str):
    return [f for f in findings(code, "XLA401") if "evaluation loop" in f.message]


def test_per_batch_reads_in_an_evaluation_loop_are_reported_without_a_fix():
    found = _eval_reads(READING_EVAL)
    assert [f.span.start.line for f in found] == [
        i for i, line in enumerate(src(READING_EVAL).split("\n")) if ".item()" in line
    ][:2]
    assert all(f.fix is None and f.manual for f in found)
    assert all("Accumulate" in f.manual and "after the loop" in f.manual for f in found)
    assert fixed(READING_EVAL, "XLA401") == src(READING_EVAL)


def test_an_evaluation_loop_that_accumulates_on_the_device_is_quiet():
    from tests.rules.test_xla107_eval_loop import ACCUMULATING_EVAL

    assert _eval_reads(ACCUMULATING_EVAL) == []


def test_a_loop_over_something_else_than_a_loader_is_no_evaluation_loop():
    code = READING_EVAL.replace("for x, y in test_loader:", "for x, y in pairs:")
    assert _eval_reads(code) == []


HANDED_IN = """
import torch
import torch.nn as nn


class Meter:
    def log_every(self, iterable, every):
        yield from iterable

    def update(self, **values):
        pass


def train_one_epoch(net, loader, opt, device):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


@torch.no_grad()
def evaluate(loader, net, device):
    meter = Meter()
    for x, y in meter.log_every(loader, 10):
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(net(x), y)
        meter.update(loss=loss.item())
"""


def test_reads_in_an_evaluation_loop_over_a_loader_handed_in_are_reported():
    # held-out 8 D14 (DeiT's engine.evaluate): the loader is a parameter, wrapped by a
    # metric logger; the read runs the graph per batch whatever loader the caller passes.
    (f,) = _eval_reads(HANDED_IN)
    assert "loss.item()" in src(HANDED_IN).splitlines()[f.span.start.line]
    assert f.fix is None


def test_a_handed_in_loader_gets_no_evaluation_sync():
    # XLA107's sync is for a provable DataLoader only (an MpDeviceLoader syncs already).
    code = HANDED_IN.replace("        meter.update(loss=loss.item())\n", "")
    assert [f for f in findings(code, "XLA107") if "evaluation" in f.message] == []


def test_reads_in_an_evaluation_loop_the_training_loop_runs_are_reported():
    # held-out 9 r4 (LoRA's evaluate() every eval_interval steps): the read runs the graph per
    # evaluation batch; XLA107 still adds no evaluation sync inside the training loop's reach.
    code = """
    import torch

    def evaluate(model, loader, device):
        total = 0.0
        with torch.no_grad():
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                total += torch.nn.functional.mse_loss(model(x), y).item()
        return total

    def train(model, loader, val_loader, opt, device):
        for step, (x, y) in enumerate(loader):
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 100 == 0:
                print(evaluate(model, val_loader, device))
    """
    (f,) = _eval_reads(code)
    assert ".item()" in src(code).splitlines()[f.span.start.line]
    assert [g for g in findings(code, "XLA107") if "evaluation" in g.message] == []


def test_a_read_every_hundred_evaluation_batches_is_not_a_per_batch_read():
    # held-out 9 re-measure w1 (LoRA's eval log under `if idx % 100 == 0`).
    code = READING_EVAL.replace(
        "            total += nn.functional.cross_entropy(out, y).item()\n",
        "            if correct % 100 == 0:\n                print(out.sum().item())\n",
    ).replace("            correct += out.argmax(1).eq(y).sum().item()\n", "")
    assert "print(out.sum().item())" in src(code)
    assert _eval_reads(code) == []


FROM_HELPER = """
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", action="store_true")
args = parser.parse_args()
net = nn.Linear(4, 2)
if args.gpu:
    net = net.cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
train_loader = make_train_loader(8)
test_loader = make_test_loader(8)


def train():
    for x, y in train_loader:
        if args.gpu:
            x, y = x.cuda(), y.cuda()
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


@torch.no_grad()
def evaluate():
    test_loss = 0.0
    for x, y in test_loader:
        if args.gpu:
            x, y = x.cuda(), y.cuda()
        test_loss += nn.functional.cross_entropy(net(x), y).item()
    return test_loss
"""

LOADERS = """
import torch


def make_train_loader(bs):
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    return torch.utils.data.DataLoader(data, batch_size=bs, shuffle=True)


def make_test_loader(bs):
    data = torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    return torch.utils.data.DataLoader(data, batch_size=bs)
"""


def _eval_reads_of(path) -> list:
    from xla_lens.engine import analyze

    result = analyze(path.read_text(encoding="utf-8"), str(path))
    assert not result.rule_errors, result.rule_errors
    return [f for f in result.findings if f.code == "XLA401" and "evaluation" in f.message]


def test_reads_in_an_evaluation_loop_over_a_sibling_helpers_loader_are_reported(
    tmp_path, fresh_workspace_caches
):
    # held-out 16 (pytorch-cifar100's eval_training): the test loader comes from
    # get_test_dataloader() in utils.py; its loop's `loss.item()` runs the graph per batch.
    (tmp_path / "loaders.py").write_text(src(LOADERS), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(
        "from loaders import make_test_loader, make_train_loader\n" + src(FROM_HELPER),
        encoding="utf-8",
    )
    (f,) = _eval_reads_of(script)
    line = script.read_text(encoding="utf-8").splitlines()[f.span.start.line]
    assert "test_loss +=" in line and f.fix is None and "after the loop" in f.manual


def test_reads_in_an_evaluation_loop_over_a_local_helpers_loader_are_reported():
    (f,) = _eval_reads(src(LOADERS) + src(FROM_HELPER))
    assert f.fix is None


def test_an_unresolved_loader_call_is_not_claimed(tmp_path, fresh_workspace_caches):
    # Without the sibling module the loader's maker is out of reach: nothing is claimed.
    script = tmp_path / "train.py"
    script.write_text(
        "from loaders import make_test_loader, make_train_loader\n" + src(FROM_HELPER),
        encoding="utf-8",
    )
    assert _eval_reads_of(script) == []


EVAL_MODE = """
import torch
import torch.nn as nn

net = nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
data = torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
loader = torch.utils.data.DataLoader(data, batch_size=4)


def train():
    net.train()
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def test():
    net.eval()
    correct = 0
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        correct += net(x).argmax(1).eq(y).cpu().sum()
    return correct
"""


def test_a_loop_after_eval_mode_without_no_grad_is_an_evaluation_loop():
    # held-out 20 (mixup-cifar10's test(): `net.eval()`, the legacy `Variable(x, volatile=True)`
    # and no `torch.no_grad()`): its per-batch `.cpu()` runs the graph once per batch.
    (f,) = _eval_reads(EVAL_MODE)
    assert ".cpu()" in src(EVAL_MODE).splitlines()[f.span.start.line] and f.fix is None


def test_a_loop_that_trains_after_eval_mode_is_no_evaluation_loop():
    # Batch norm frozen with `net.eval()` while training: the loop steps, it is no evaluation.
    code = EVAL_MODE.replace(
        "        correct += net(x).argmax(1).eq(y).cpu().sum()\n",
        "        loss = net(x).sum()\n        loss.backward()\n        correct += loss.cpu()\n",
    )
    assert _eval_reads(code) == []


ESTIMATE_LOSS = """
import torch
import torch.nn as nn

device = "cuda"
data = torch.randint(0, 10, (1000,))
model = nn.Sequential(nn.Embedding(10, 8), nn.Flatten(), nn.Linear(64, 10)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)


def get_batch():
    ix = torch.randint(len(data) - 9, (4,))
    x = torch.stack([data[i : i + 8] for i in ix])
    y = torch.stack([data[i + 8] for i in ix])
    return x.to(device), y.to(device)


@torch.no_grad()
def estimate_loss():
    model.eval()
    losses = torch.zeros(20)
    for k in range(20):
        x, y = get_batch()
        losses[k] = nn.functional.cross_entropy(model(x), y).item()
    model.train()
    return losses.mean()


for it in range(100):
    if it % 10 == 0:
        print(estimate_loss())
    x, y = get_batch()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
"""


def test_reads_in_a_counted_evaluation_loop_over_a_batch_helper_are_reported():
    # held-out 8 N13 and held-out 20 (nanoGPT's and ng-video-lecture's estimate_loss):
    # `for k in range(eval_iters)` drawing moved batches from get_batch(), `.item()` each.
    (f,) = _eval_reads(ESTIMATE_LOSS)
    assert "losses[k] =" in src(ESTIMATE_LOSS).splitlines()[f.span.start.line]
    assert f.fix is None
    # A counted loop that draws nothing from a device helper and runs no module placed on
    # the device is no evaluation loop.
    assert (
        _eval_reads(
            ESTIMATE_LOSS.replace(
                "x, y = get_batch()\n        losses[k] = nn.functional.cross_entropy(model(x), y)",
                "x, y = data[:8][None], data[:1]\n        losses[k] = nn.functional.cross_entropy(x.float(), y)",
            )
        )
        == []
    )


PARSE_BATCH = """
import torch


def validate(model, loader):
    model.eval()
    with torch.no_grad():
        total = 0.0
        for i, batch in enumerate(loader):
            x, y = model.parse_batch(batch)
            loss = torch.nn.functional.mse_loss(model(x), y)
            total += loss.item()
    return total


def train(model, loader, opt):
    model.cuda()
    for i, batch in enumerate(loader):
        x, y = model.parse_batch(batch)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 100 == 0:
            print(validate(model, loader))
"""


def test_an_evaluation_loop_preparing_its_batch_as_the_training_loop_does():
    # held-out 20 (tacotron2's validate): `model.parse_batch(batch)` moves the batch in
    # another module, as in the training loop.
    (f,) = _eval_reads(PARSE_BATCH)
    assert ".item()" in src(PARSE_BATCH).splitlines()[f.span.start.line]
    other = PARSE_BATCH.replace(
        "x, y = model.parse_batch(batch)\n            loss",
        "x, y = prep(batch)\n            loss",
    )
    assert _eval_reads(other) == []
