"""XLA401 in the helpers a training loop calls: a read is reported only where the value read
lives on the device (or may): what the helper computes from the loop's device tensors, not
what it builds on the CPU (``torch.eye(3, device=device)`` with a ``device="cpu"`` default the
caller never passes, Python numbers). Held-out re-measure n1 (stylegan2's augmentation)."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_calls

from tests.helpers import findings, src

CODE = "XLA401"


@pytest.fixture(autouse=True)
def _fresh_caches():
    workspace_calls.clear_cache()
    workspace.clear_cache()
    yield


# An augmentation module of the project: the warp matrix is built on the CPU (``device="cpu"``
# default, not passed), the padding comes back through two helpers and a tuple, and is read.
WARP = """
import math

import torch
import torch.nn.functional as F


def eye_batch(n, device="cpu"):
    return torch.eye(3, device=device).unsqueeze(0).repeat(n, 1, 1)


def random_turn(p, n, device="cpu"):
    mats = eye_batch(n, device=device)
    angle = torch.empty(n, device=device).uniform_(-math.pi, math.pi)
    keep = torch.empty(n, device=device).bernoulli_(p).view(n, 1, 1)
    mats[:, 0, 0] = torch.cos(angle)
    mats[:, 1, 1] = torch.cos(angle)
    return keep * mats + (1 - keep) * eye_batch(n, device=device)


def margins(mats, height, width):
    corners = torch.tensor([[-1.0, -1.0, 1.0], [1.0, 1.0, 1.0]], device=mats.device)
    spread = (mats @ corners.T)[:, :2, :].abs().amax(dim=(0, 2))
    left, top = (spread * torch.tensor([width, height], device=mats.device)).ceil().int().clamp(0, 3)
    return left, top


def pad_turned(img, p, mats=None):
    n, _, height, width = img.shape
    if mats is None:
        mats = torch.inverse(random_turn(p, n))
    left, top = margins(mats, height, width)
    padded = F.pad(img, (left, left, top, top), mode="reflect")
    return padded, mats, (left, top)


def turn(img, p):
    out, mats, (left, top) = pad_turned(img, p)
    shift = (left - top).item() / 2
    return out[..., : img.shape[2], : img.shape[3]] + shift * 0, mats


def shift_on(img, p):
    mats = random_turn(p, img.shape[0], device=img.device)
    left, top = margins(mats, img.shape[2], img.shape[3])
    return img * 0 + (left - top).item()


class Tuner:
    def __init__(self, every, device):
        self.every = every
        self.seen = 0
        self.buf = torch.zeros(2, device=device)
        self.p = 0.0

    def update(self, pred):
        self.buf += torch.tensor((torch.sign(pred).sum().item(), pred.shape[0]))
        self.seen += 1
        if self.seen % self.every == 0:
            signs, count = self.buf.tolist()
            self.p = min(1.0, max(0.0, self.p + signs / count))
        return self.p

    def settle(self, pred):
        self.seen += 1
        if self.seen % self.every == 0:
            return self.buf.tolist()
        return None


class Meter:
    def __init__(self):
        self.values = {}

    def update(self, **kwargs):
        for k, v in kwargs.items():
            if isinstance(v, torch.Tensor):
                v = v.item()
            self.values[k] = v
"""

MAIN = """
import torch
import torch_xla
from warp import Meter, Tuner, shift_on, turn

device = torch_xla.device()
net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(48, 1)).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
tuner = Tuner(4, device)
p = 0.2
for step in range(3):
    img = torch.rand(2, 3, 4, 4).to(device)
    BODY
    loss = net(img).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
"""


def _found(tmp_path: Path, body: str) -> list:
    (tmp_path / "warp.py").write_text(src(WARP), encoding="utf-8")
    main = tmp_path / "train.py"
    main.write_text(src(MAIN).replace("BODY", body), encoding="utf-8")
    result = analyze(main.read_text(), str(main))
    assert not result.rule_errors, result.rule_errors
    return [f for f in result.findings if f.code == CODE]


def test_a_sibling_read_of_a_matrix_built_on_the_cpu_is_no_read(tmp_path: Path):
    # ``random_turn(p, n)`` leaves ``device="cpu"``: the margins, unpacked from a tuple two
    # helpers up, are CPU tensors; ``img`` (on the device) only flows into ``out``.
    assert _found(tmp_path, "img, _ = turn(img, p)") == []


def test_a_sibling_read_of_a_matrix_placed_on_the_images_device_is_reported(tmp_path: Path):
    (f,) = _found(tmp_path, "img = shift_on(img, p)")
    assert "warp.py:" in f.message and "`shift_on`" in f.message
    assert "reads a device tensor" in f.message and "may read" not in f.message


def test_a_method_of_a_sibling_class_reading_its_device_argument_is_reported(tmp_path: Path):
    # ``tuner.update(pred)`` runs ``torch.sign(pred).sum().item()`` every step; its
    # ``.tolist()`` under ``if self.seen % self.every == 0:`` is not the one named.
    (f,) = _found(tmp_path, "p = tuner.update(net(img))")
    assert f.span.start.line == 11  # the call in the loop (0-based)
    assert "`tuner.update(...)`" in f.message and "`update`" in f.message
    line = (
        src(WARP)
        .splitlines()
        .index("        self.buf += torch.tensor((torch.sign(pred).sum().item(), pred.shape[0]))")
    )
    assert f"warp.py:{line + 1}" in f.message


def test_a_periodic_read_in_a_sibling_method_is_not_an_every_step_read(tmp_path: Path):
    assert _found(tmp_path, "tuner.settle(net(img))") == []


def test_a_sibling_meter_given_the_learning_rate_reads_no_tensor(tmp_path: Path):
    # ``param_groups[0]["lr"]`` is a Python float, though the optimizer holds device
    # parameters: the meter's ``.item()`` under ``isinstance(v, torch.Tensor)`` never runs
    # (held-out 7/8 w1; PJRT CPU: the call adds no execution).
    body = 'Meter().update(lr=opt.param_groups[0]["lr"], wd=opt.param_groups[-1]["weight_decay"])'
    assert _found(tmp_path, body) == []


def test_a_sibling_meter_given_the_loss_tensor_reads_it(tmp_path: Path):
    (f,) = _found(tmp_path, "Meter().update(loss=net(img).mean())")
    assert "`update`" in f.message


def test_a_sibling_meter_given_the_parameters_of_a_group_reads_them(tmp_path: Path):
    (f,) = _found(tmp_path, 'Meter().update(p=opt.param_groups[0]["params"][0])')
    assert "`update`" in f.message


LOCAL = """
import torch
import torch_xla

device = torch_xla.device()
net = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.1)


def draw_shift(n, device="cpu"):
    return torch.randint(0, 3, (n,), device=device)


def roll_batch(x):
    s = draw_shift(2, PLACE)
    return x.roll(int(s[0].item()), 1)


def gate(x, warm):
    if warm:
        level = x.mean()
    else:
        level = torch.zeros(())
    return x * float(level.item() > 0)


def scaled(x, factor):
    return x * torch.tensor(factor).item()


for step in range(3):
    x = torch.rand(2, 4, device=device)
    x = CALL
    loss = net(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
"""


def _local(call: str, place: str = "") -> list:
    code = LOCAL.replace("CALL", call).replace("draw_shift(2, PLACE)", f"draw_shift(2{place})")
    return findings(code, CODE)


def test_a_script_helper_reading_a_tensor_drawn_with_the_cpu_default_is_quiet():
    assert _local("roll_batch(x)") == []


def test_a_script_helper_reading_a_tensor_drawn_on_its_arguments_device_is_reported():
    (f,) = _local("roll_batch(x)", ", device=x.device")
    assert "`roll_batch`" in f.message and "reads a device tensor" in f.message


def test_a_helper_reading_a_tensor_made_from_python_numbers_is_quiet():
    assert _local("scaled(x, 0.5)") == []


def test_a_read_of_a_cpu_tensor_on_one_path_and_a_device_one_on_another_may_read():
    # Evidence both ways: reported, softly, rather than kept quiet.
    (f,) = _local("gate(x, step > 0)")
    assert "`gate`" in f.message and "may read a device tensor" in f.message
    assert "CPU tensor on some paths" in f.message


MOVED_IN_PLACE = """
import torch
import torch_xla

device = torch_xla.device()
windows = {}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


def grad_sq(net):
    total = 0.0
    for p in net.parameters():
        total += p.grad.norm().item() ** 2
    return total


def window_peak(x):
    key = str(x.shape[-1])
    if key not in windows:
        windows[key] = torch.hann_window(x.shape[-1]).to(x.device)
    return windows[key].max().item()


net = Net()
net.to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    x = torch.rand(2, 4, device=device)
    loss = net(x).sum()
    opt.zero_grad()
    loss.backward()
    CALL
    opt.step()
    torch_xla.sync()
"""


def test_a_module_moved_in_place_keeps_its_parameters_reads_reported():
    # ``net = Net(); net.to(device)``: the object is not rebound, its gradients are on the
    # device; a class instance is an unknown place, never a host value.
    (f,) = findings(MOVED_IN_PLACE.replace("CALL", "g = grad_sq(net)"), CODE)
    assert "`grad_sq`" in f.message and "reads a device tensor" in f.message


def test_a_module_level_cache_filled_with_device_tensors_is_read_on_the_device():
    # ``windows[key] = ....to(x.device)`` in the helper stores device tensors into the dict.
    (f,) = findings(MOVED_IN_PLACE.replace("CALL", "peak = window_peak(x)"), CODE)
    assert "`window_peak`" in f.message and "reads a device tensor" in f.message
