"""XLA401/XLA404 on meters a sibling module defines (held-out 42, hubert's ``Metric`` from
hubert/utils.py): ``validation_loss = Metric()`` fed ``loss.item()`` holds Python floats, so
logging ``validation_loss.value`` or testing ``best_loss > validation_loss.value`` reads
nothing from the device — the ``_loss`` in its name says nothing of a meter. A meter fed the
tensor itself is still a device value."""

import pytest
from xla_lens.engine import analyze

from tests.helpers import src

METRIC = """
class Metric:
    def __init__(self):
        self.steps = 0
        self.value = 0

    def update(self, value):
        self.steps += 1
        self.value += (value - self.value) / self.steps

    def reset(self):
        self.steps = 0
        self.value = 0
"""

TRAIN = """
import logging

import torch
import torch.nn.functional as F

from metric import Metric

logger = logging.getLogger(__name__)


def train(model, loader, optimizer, writer):
    device = torch.device("cuda")
    model.to(device)
    validation_loss = Metric()
    best_loss = float("inf")
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            validation_loss.reset()
            for vx, vy in loader:
                with torch.no_grad():
                    vloss = F.cross_entropy(model(vx.to(device)), vy.to(device))
                validation_loss.update(vloss.item())
            writer.add_scalar("validation/loss", validation_loss.value, step)
            logger.info(f"valid loss {validation_loss.value:.4f}")
            new_best = best_loss > validation_loss.value
            if new_best:
                best_loss = validation_loss.value
"""

LOGGED = (28, 29)  # 1-based lines of the two reports of validation_loss.value
TESTED = 31  # ``if new_best:``


def _findings(tmp_path, train: str, metric: str = METRIC) -> list:
    (tmp_path / "metric.py").write_text(src(metric))
    script = tmp_path / "train.py"
    script.write_text(src(train))
    return analyze(script.read_text(), str(script)).findings


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_a_sibling_meter_fed_python_floats_is_no_device_read(tmp_path):
    found = _findings(tmp_path, TRAIN)
    lines = {(f.code, f.span.start.line + 1) for f in found}
    assert ("XLA401", 27) in lines  # the ``vloss.item()`` read itself stays
    for line in LOGGED:
        assert ("XLA401", line) not in lines
    assert ("XLA404", TESTED) not in lines


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_a_sibling_meter_fed_the_tensor_is_still_a_device_value(tmp_path):
    fed_tensor = TRAIN.replace(
        "validation_loss.update(vloss.item())", "validation_loss.update(vloss)"
    )
    lines = {(f.code, f.span.start.line + 1) for f in _findings(tmp_path, fed_tensor)}
    for line in LOGGED:
        assert ("XLA401", line) in lines
    assert ("XLA404", TESTED) in lines


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_a_sibling_class_with_a_library_base_is_not_judged_a_plain_meter(tmp_path):
    # ``class Metric(SomeLibraryBase)``: the base could make it anything.
    based = "from somewhere import Base\n" + METRIC.replace("class Metric:", "class Metric(Base):")
    lines = {(f.code, f.span.start.line + 1) for f in _findings(tmp_path, TRAIN, based)}
    assert ("XLA401", LOGGED[0]) in lines


LOGGER = """
from collections import defaultdict

import torch


class MetricLogger:
    def __init__(self):
        self.meters = defaultdict(list)

    def update(self, **kwargs):
        for k, v in kwargs.items():
            if v is None:
                continue
            if isinstance(v, torch.Tensor):
                v = v.item()
            self.meters[k].append(v)
"""

LOGGED_STEP = """
import torch
import torch.nn.functional as F

from logger import MetricLogger


def train(model, loader, optimizer):
    device = torch.device("cuda")
    model.to(device)
    metric_logger = MetricLogger()
    for x, y in loader:
        out = model(x.to(device))
        loss = F.cross_entropy(out, y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_value = loss.item()
        max_lr = 0.0
        for group in optimizer.param_groups:
            max_lr = max(max_lr, group["lr"])
        metric_logger.update(loss=loss_value)
        metric_logger.update(lr=max_lr)
        metric_logger.update(acc=(out.argmax(-1) == y.to(device)).float().mean())
"""


@pytest.mark.usefixtures("fresh_workspace_caches")
def test_a_sibling_logger_reading_only_tensors_it_is_handed(tmp_path):
    # Held-out 85 (VideoMAE's MetricLogger.update: `if isinstance(v, torch.Tensor): v =
    # v.item()`): handed Python numbers it reads nothing; handed the accuracy tensor it does.
    (tmp_path / "logger.py").write_text(src(LOGGER))
    script = tmp_path / "train.py"
    script.write_text(src(LOGGED_STEP))
    found = analyze(script.read_text(), str(script)).findings
    updates = [
        f.span.start.line + 1
        for f in found
        if f.code == "XLA401" and "metric_logger.update" in f.message
    ]
    assert updates == [23]
