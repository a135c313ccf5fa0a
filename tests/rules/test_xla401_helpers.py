"""XLA401 follows the helpers a training loop calls every step: a host read in one of them
(a grad-norm helper that reads each parameter's norm with ``.item()``) syncs every step too."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_calls

from tests.helpers import findings, src

CODE = "XLA401"

NORM_HELPER = """
import torch

dev = torch.device("cuda")


def total_norm(params, power=2.0):
    acc = 0.0
    for q in params:
        if q.grad is not None:
            acc += q.grad.detach().norm(power).item() ** power
    return acc ** (1.0 / power)


def outer_norm(params):
    return total_norm(params) * 1.0


net = torch.nn.Linear(3, 1).to(dev)
sgd = torch.optim.SGD(net.parameters(), lr=0.1)
for it in range(5):
    out = net(torch.randn(4, 3, device=dev)).sum()
    sgd.zero_grad()
    out.backward()
    norm = CALL
    sgd.step()
"""


def test_a_read_in_a_helper_the_loop_calls_every_step_is_reported_there():
    (f,) = findings(NORM_HELPER.replace("CALL", "total_norm(net.parameters())"), CODE)
    assert f.span.start.line == 9  # the ``.item()`` in the helper (0-based lines)
    assert f.fix is None and f.manual
    assert "`total_norm`" in f.message and "line 20" in f.message  # the loop's line
    assert "line 24" in f.message  # the call
    assert "clip_grad_norm_" in f.manual or "torch.stack" in f.manual


def test_a_helper_called_under_a_flag_says_when():
    """ssd.pytorch's plot update under ``if args.visdom:`` (held-out 106): every step, but
    only while the flag holds."""
    code = NORM_HELPER.replace(
        "    norm = CALL\n", "    if plot:\n        norm = total_norm(net.parameters())\n"
    )
    (f,) = findings(code.replace("dev = torch", "plot = True\ndev = torch"), CODE)
    assert "calls every step while `plot` holds" in f.message
    (plain,) = findings(NORM_HELPER.replace("CALL", "total_norm(net.parameters())"), CODE)
    assert "holds" not in plain.message


def test_two_levels_of_helpers_are_followed():
    (f,) = findings(NORM_HELPER.replace("CALL", "outer_norm(net.parameters())"), CODE)
    assert f.span.start.line == 9
    assert "`total_norm`" in f.message and "`outer_norm`" in f.message


def test_a_helper_called_only_outside_the_loop_is_not_reported():
    code = NORM_HELPER.replace("CALL", "0.0") + "print(total_norm(net.parameters()))\n"
    assert findings(code, CODE) == []


def test_a_helper_called_under_a_periodic_block_is_not_an_every_step_read():
    code = NORM_HELPER.replace(
        "    norm = CALL\n", "    if it % 10 == 0:\n        norm = total_norm(net.parameters())\n"
    )
    assert findings(code, CODE) == []


def test_a_helper_reading_host_values_is_not_reported():
    code = """
    import torch

    dev = torch.device("cuda")


    def mean_of(values):
        acc = torch.zeros(3)
        for v in values:
            acc += v
        return acc.sum().item()


    net = torch.nn.Linear(3, 1).to(dev)
    sgd = torch.optim.SGD(net.parameters(), lr=0.1)
    for it in range(5):
        out = net(torch.randn(4, 3, device=dev)).sum()
        out.backward()
        m = mean_of([1.0, 2.0])
        sgd.step()
    """
    assert findings(code, CODE) == []


def test_a_helper_given_only_python_numbers_is_not_reported():
    code = """
    import torch

    dev = torch.device("cuda")


    def show(loss):
        print(loss)


    net = torch.nn.Linear(3, 1).to(dev)
    sgd = torch.optim.SGD(net.parameters(), lr=0.1)
    for it in range(5):
        out = net(torch.randn(4, 3, device=dev)).sum()
        out.backward()
        sgd.step()
        show(3.0)
    """
    assert findings(code, CODE) == []


def test_one_finding_for_a_helper_called_twice_in_the_loop():
    code = NORM_HELPER.replace(
        "    norm = CALL\n",
        "    norm = total_norm(net.parameters())\n    again = total_norm(net.parameters())\n",
    )
    assert [f.span.start.line for f in findings(code, CODE)] == [9]


SIBLING = """
import torch


def grad_total(parameters):
    total = 0.0
    for p in parameters:
        total += p.grad.detach().norm(2).item() ** 2
    return total ** 0.5


def quiet(parameters):
    return sum(1 for _ in parameters)
"""

MAIN = """
import torch
IMPORT

dev = torch.device("cuda")
net = torch.nn.Linear(3, 1).to(dev)
sgd = torch.optim.SGD(net.parameters(), lr=0.1)
for it in range(5):
    out = net(torch.randn(4, 3, device=dev)).sum()
    out.backward()
    gn = CALL(net.parameters())
    sgd.step()
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    workspace_calls.clear_cache()
    workspace.clear_cache()
    yield


def _found(tmp_path: Path, imp: str, call: str) -> list:
    (tmp_path / "gradtools.py").write_text(src(SIBLING), encoding="utf-8")
    main = tmp_path / "train.py"
    main.write_text(src(MAIN.replace("IMPORT", imp).replace("CALL", call)), encoding="utf-8")
    result = analyze(main.read_text(), str(main))
    assert not result.rule_errors, result.rule_errors
    return [f for f in result.findings if f.code == CODE]


@pytest.mark.parametrize(
    ("imp", "call"),
    [
        ("from gradtools import grad_total", "grad_total"),
        ("import gradtools", "gradtools.grad_total"),
    ],
)
def test_a_sibling_helper_that_reads_is_reported_at_the_call(tmp_path: Path, imp, call):
    (f,) = _found(tmp_path, imp, call)
    assert f.span.start.line == 9  # the call in the loop
    assert "grad_total" in f.message and "gradtools.py:7" in f.message
    assert f.fix is None and f.manual


def test_a_sibling_helper_without_reads_is_quiet(tmp_path: Path):
    assert _found(tmp_path, "from gradtools import quiet", "quiet") == []


CPU_RANDOM = """
import torch
import torch_xla

device = torch_xla.device()
model = torch.nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def shift_pad(img):
    shift = torch.randint(0, 4, (2,))
    pad = (shift[0] - shift[1]).abs()
    return torch.nn.functional.pad(img, (int(pad.item()), 0))


for step in range(3):
    x = torch.randn(4, 5).to(device)
    x = shift_pad(x)[:, :8]
    noise = torch.rand(1) * torch.randn(2).abs().max()
    if noise.item() > 0.5:
        x = x * 2
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
"""


def test_reads_of_tensors_drawn_on_the_cpu_sync_nothing():
    # torch.randint/rand/randn without device= make CPU tensors: reading them runs no graph
    # (held-out stylegan2's augmentation draws its padding this way, every step).
    assert findings(CPU_RANDOM, CODE) == []
    on_device = CPU_RANDOM.replace(
        "torch.randint(0, 4, (2,))", "torch.randint(0, 4, (2,), device=device)"
    )
    (f,) = findings(on_device, CODE)
    assert "shift_pad" in f.message


def test_a_tensor_test_in_a_sibling_helper_is_its_every_step_read(tmp_path: Path):
    # vits' mel_spectrogram_torch (held-out 37): ``if torch.min(y) < -1.:`` reads the device on
    # every call; the print under it runs only when the test holds, so the test is the read.
    (tmp_path / "mel.py").write_text(
        src(
            """
            import torch


            def mel(y, n_fft):
                if torch.min(y) < -1.0:
                    print("min value is ", torch.min(y))
                if y is None:
                    raise ValueError("no audio")
                return torch.stft(y, n_fft, return_complex=True).abs()
            """
        ),
        encoding="utf-8",
    )
    script = tmp_path / "train.py"
    script.write_text(
        src(
            """
            import torch
            from mel import mel

            dev = torch.device("cuda")
            net = torch.nn.Linear(5, 1).to(dev)
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            for step in range(10):
                y = torch.randn(4, 64, device=dev)
                spec = mel(y, 8)
                loss = net(spec.mean(-1)).sum()
                loss.backward()
                opt.step()
            """
        ),
        encoding="utf-8",
    )
    found = [f for f in analyze(script.read_text(), str(script)).findings if f.code == CODE]
    (f,) = [f for f in found if "mel.py" in f.message]
    assert "mel.py:5" in f.message and "an if testing a tensor (`torch.min(y) < -1.0`)" in f.message


def test_asserts_on_tensors_in_a_helper_the_step_calls():
    """Held-out 93, RAFT-Stereo's loss: ``assert not torch.isnan(flow_preds[i]).any()`` and
    ``assert not torch.isinf(...).any()`` in the loss helper, every step: each is a host read
    (the negation and the trailing ``.any()`` read the tensor all the same)."""
    code = """
    import torch
    import torch_xla

    def sequence_loss(pred, gt):
        assert not torch.isnan(pred).any()
        assert torch.isfinite(pred).all()
        assert pred.shape == gt.shape
        loss = (pred - gt).abs().mean()
        return loss

    def train(model, loader, opt, device):
        for x, y in loader:
            loss = sequence_loss(model(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()
    """
    found = findings(code, "XLA401")
    assert [f.span.start.line + 1 for f in found] == [5, 6]
    assert "an assert testing a tensor (`not torch.isnan(pred).any()`)" in found[0].message
    assert "in `sequence_loss`, which the training loop" in found[1].message
